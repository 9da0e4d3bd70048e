# shellcheck shell=bash
# e2e case gang-incomplete (sourced by run.sh, which provides k, check, new_ns, cleanup_ns, e2e_pods,
# has_event, bound, all_running): a gang whose members are not all created yet says so on its pods.
#
# Two pods of a gang of 4 ("tidal.dev/gang-size": "4") are held out of the scheduling queue
# (PreEnqueue), where kube-scheduler writes no event; after incompleteEventMs (2 s in the e2e
# config, 30 s by default) each gets one TidalGangIncomplete event with the engine's count (before,
# nothing said why they were Pending). Then the other two are created and all four are bound
# together. About 8 s.
MORE_CASES+=(gang-incomplete)

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
