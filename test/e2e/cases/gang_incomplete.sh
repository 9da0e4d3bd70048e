# shellcheck shell=bash
# e2e cases gang-incomplete and gang-conflict (sourced by run.sh, which provides k, check, new_ns,
# cleanup_ns, e2e_pods, has_event, bound, all_running): what a gang's pods are told when its members
# are not all created yet, or do not agree on the gang.
#
# Two pods of a gang of 4 ("tidal.dev/gang-size": "4") are held out of the scheduling queue
# (PreEnqueue), where kube-scheduler writes no event; after incompleteEventMs (2 s in the e2e
# config, 30 s by default) each gets one TidalGangIncomplete event with the engine's count (before,
# nothing said why they were Pending). Then the other two are created and all four are bound
# together. About 8 s.
#
# gang-conflict: two pods of gang "mix" say gang-size 2 and 3. Both get TidalInvalidSpec naming
# tidal.dev/gang-size, both values and both pods, and neither is bound (before, one was planned and
# waited in Permit for the other, held as incomplete, with nothing saying why). Once the annotation
# is fixed on the second pod, both run. About 4 s.
#
# gang-gated: a gang of 3 whose third pod carries a scheduling gate (as Kueue gates pods until it
# admits them). The two others wait in PreEnqueue, none bound, and get TidalGangIncomplete naming
# the gated pod and its gate (before, they were planned and reserved and waited in Permit for it,
# were released after permitTimeoutSeconds and planned again, over and over, holding their nodes,
# with only "rejected due to timeout after waiting 20s at plugin Tidal"). Once the gate is
# removed, all three run. About 5 s.
MORE_CASES+=(gang-incomplete gang-conflict gang-gated)

case_gang-incomplete() {
  local ns=e2e-gang-incomplete t0
  new_ns $ns
  local labels='{"tidal.dev/gang": "four"}' ann='{"tidal.dev/gang-size": "4"}'
  e2e_pods $ns first 2 8 tidal-scheduler "$labels" "$ann" | k create -f - >/dev/null
  check "each of the two members gets a TidalGangIncomplete event naming the count" until_true 20 \
    eval "has_event $ns TidalGangIncomplete first-0 '2 of 4 members exist' && has_event $ns TidalGangIncomplete first-1 '2 of 4 members exist'"
  check "they stay unbound (a gang of 4 never starts with 2)" test "$(bound $ns)" -eq 0
  check "one event per pod" test "$(events $ns TidalGangIncomplete | grep -c .)" -eq 2
  t0=$(e2e_now_ms)
  e2e_pods $ns rest 2 8 tidal-scheduler "$labels" "$ann" | k create -f - >/dev/null
  check "once the other two exist, all four run" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 4 tidal.dev/gang=four
  timings+=("gang-incomplete-completed-running=$(ms_since "$t0")ms")
  cleanup_ns $ns
}

case_gang-conflict() {
  local ns=e2e-gang-conflict t0
  new_ns $ns
  e2e_pods $ns two 1 8 tidal-scheduler '{"tidal.dev/gang": "mix"}' '{"tidal.dev/gang-size": "2"}' | k create -f - >/dev/null
  e2e_pods $ns three 1 8 tidal-scheduler '{"tidal.dev/gang": "mix"}' '{"tidal.dev/gang-size": "3"}' | k create -f - >/dev/null
  check "both pods get TidalInvalidSpec naming the field and both values" until_true 15 \
    eval "has_event $ns TidalInvalidSpec two-0 'disagree on tidal.dev/gang-size' && has_event $ns TidalInvalidSpec three-0 'disagree on tidal.dev/gang-size: ' '(pod two-0)' '(pod three-0)'"
  check "neither is bound" test "$(bound $ns)" -eq 0
  t0=$(e2e_now_ms)
  k annotate pod -n $ns three-0 --overwrite tidal.dev/gang-size=2 >/dev/null
  check "once both say 2, both run" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 2 tidal.dev/gang=mix
  timings+=("gang-conflict-fixed-running=$(ms_since "$t0")ms")
  cleanup_ns $ns
}

case_gang-gated() {
  local ns=e2e-gang-gated t0
  new_ns $ns
  e2e_pods $ns gated 3 8 tidal-scheduler '{"tidal.dev/gang": "gated"}' '{"tidal.dev/gang-size": "3"}' | python3 -c '
import json, sys
pods = json.load(sys.stdin)
pods["items"][2]["spec"]["schedulingGates"] = [{"name": "e2e.tidal.dev/admit"}]
print(json.dumps(pods))' | k create -f - >/dev/null
  check "the two others get TidalGangIncomplete naming the gated pod and its gate" until_true 20 \
    eval "has_event $ns TidalGangIncomplete gated-0 'held back by spec.schedulingGates (pod gated-2 waits for e2e.tidal.dev/admit' && has_event $ns TidalGangIncomplete gated-1 'gated-2'"
  check "none is bound" test "$(bound $ns)" -eq 0
  check "the engine holds no plan for it (no member reserved, waiting in Permit)" \
    eval "! curl -sf 'http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/explain?workload=$ns/gated' | grep -q '^plan:'"
  t0=$(e2e_now_ms)
  k patch pod -n $ns gated-2 --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates"}]' >/dev/null
  check "once the gate is removed, all three run" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 3 tidal.dev/gang=gated
  timings+=("gang-gated-ungated-running=$(ms_since "$t0")ms")
  cleanup_ns $ns
}
