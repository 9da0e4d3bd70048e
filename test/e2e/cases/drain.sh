# shellcheck shell=bash
# e2e case drain (sourced by run.sh, which provides k, check, fail, until_true, events, has_event,
# no_event, new_ns, cleanup_ns, pod_field, $BASE): a gang-aware drain with build/bin/tidalctl
# (`tidalctl drain --engine ADDR --by TIME NODE...`, `--cancel NODE...`, and without nodes the
# status: one line per node, `NODE STATE free-at=... left=N note`), on the e2e engine's gRPC
# address (tidal-up.sh: unix://BASE/run/engine.sock).
#
# On the first two nodes of node-0's NVLink domain, A and B (pinned by kubernetes.io/hostname, 4 GPUs
# each, so capacity never holds a pod back): pod "short" on A declares tidal.dev/runtime-limit 20s
# and ends by itself after 15 s (kwok's sim.tidal.dev/runtime: a job that finishes), pod "long" on B
# declares no runtime limit. `tidalctl drain --by +40s A B`; asserted: both nodes report draining;
# long is evicted before the deadline (TidalDisrupted naming drain); short is not (it runs to
# Succeeded, no TidalDisrupted or TidalRuntimeLimitExceeded); a 4-GPU pod pinned to A, created
# after the drain, is not bound while A is drained; once both nodes are empty the status says
# drained for both, and the pinned pod is still not bound; `--cancel A B` lets it bind within 15 s
# and the status no longer lists them; `tidalctl waves --domain nvlink` puts A and B in one wave and
# without --max-nodes / --domain exits 2. Then `tidalctl waves A B --max-nodes 1 --run --by 5s --exec
# HOOK` runs two waves: HOOK (the "upgrade") runs once per wave with that wave's node, which the
# status reports drained while it runs; pinned-0 (now on A, no runtime limit) is disrupted for its
# wave (TidalDisrupted naming drain); the run exits 0 and leaves no drain; with `--exec false` it exits 1
# and leaves the wave drained. The drain is cancelled at
# the end in any case (the engine keeps drains until cancelled). About 45 s.
MORE_CASES+=(drain)

drain_ctl() { "$TIDAL_E2E_BIN/tidalctl" drain --engine "unix://$BASE/run/engine.sock" "$@"; }
drain_state() {  # drain_state NODE: its STATE in the status ("" when not listed)
  drain_ctl 2>/dev/null | awk -v n="$1" '$1 == n {print $2; exit}'
}
drain_state_is() { [ "$(drain_state "$1")" = "$2" ]; }

case_drain() {
  local ns=e2e-drain dom a b t0 ms out p
  new_ns $ns
  out=$("$TIDAL_E2E_BIN/tidalctl" drain --help 2>&1 || true)  # its usage (exit status 2)
  if ! grep -q -- '--cancel' <<<"$out"; then
    fail "$TIDAL_E2E_BIN/tidalctl has no drain command"
    return 0
  fi
  dom=$(k get node "${TIDAL_E2E_NODE_PREFIX:-node-}0" -o jsonpath='{.metadata.labels.topology\.tidal\.dev/nvlink}' 2>/dev/null || true)
  read -r a b < <(k get nodes -l "topology.tidal.dev/nvlink=${dom:-none}" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' |
    sort -V | head -n 2 | tr '\n' ' ') || true  # no newline at the end: read says 1
  if [ -z "$dom" ] || [ -z "${b:-}" ]; then
    fail "no NVLink domain with 2 nodes at ${TIDAL_E2E_NODE_PREFIX:-node-}0 (got '$dom': '${a:-}' '${b:-}')"
    return 0
  fi
  { e2e_pods $ns short 1 4 tidal-scheduler '{}' '{"tidal.dev/runtime-limit": "20s", "sim.tidal.dev/runtime": "15s"}' \
      "{\"kubernetes.io/hostname\": \"$a\"}"
    e2e_pods $ns long 1 4 tidal-scheduler '{}' '{}' "{\"kubernetes.io/hostname\": \"$b\"}"; } | k create -f - >/dev/null
  check "short (runtime-limit 20s, ends after 15 s) runs on $a, long (no limit) on $b" until_true "$TIDAL_E2E_TIMEOUT" \
    eval "pod_field_is $ns short-0 '{.status.phase}' Running && pod_field_is $ns long-0 '{.status.phase}' Running"
  sleep 0.5  # the engine hears of the bindings through the Sync stream
  t0=$(e2e_now_ms)
  if out=$(drain_ctl --by +40s "$a" "$b" 2>&1); then
    check "tidalctl drain --by +40s $a $b" true
  else
    fail "tidalctl drain --by +40s $a $b: $out"
  fi
  sed 's/^/    drain: /' <<<"$out" >&2
  check "the status says draining for both ($(drain_ctl 2>&1 | tr '\n' ';' | cut -c1-300))" \
    eval "drain_state_is $a draining && drain_state_is $b draining"
  e2e_pods $ns pinned 1 4 tidal-scheduler '{}' '{}' "{\"kubernetes.io/hostname\": \"$a\"}" | k create -f - >/dev/null

  check "long is evicted before the 40 s deadline" until_true 45 eval "[ -z \"\$(k get pods -n $ns long-0 -o name 2>/dev/null)\" ]"
  ms=$(ms_since "$t0")
  timings+=("drain-long-gone=${ms}ms")
  check "  (${ms} ms after the drain, the deadline 40000 ms)" test "$ms" -lt 40000
  check "a TidalDisrupted event for long-0 names the cause drain" has_event $ns TidalDisrupted long-0 ': drain: '
  events $ns TidalDisrupted | grep long-0 | head -n 1 | cut -f3 | cut -c1-220 | sed 's/^/    event: /' >&2
  check "the pod pinned to the drained $a is not bound" test -z "$(pod_field $ns pinned-0 '{.spec.nodeName}')"

  check "short is not evicted: it runs to Succeeded" until_true 30 pod_field_is $ns short-0 '{.status.phase}' Succeeded
  check "  never terminated by Tidal (no deletionTimestamp)" test -z "$(pod_field $ns short-0 '{.metadata.deletionTimestamp}')"
  check "  no TidalDisrupted or TidalRuntimeLimitExceeded event for short-0" \
    eval "no_event $ns TidalDisrupted short-0 && no_event $ns TidalRuntimeLimitExceeded short-0"
  check "once both nodes are empty the status says drained for both" until_true 20 \
    eval "drain_state_is $a drained && drain_state_is $b drained"
  drain_ctl 2>&1 | sed 's/^/    status: /' >&2
  timings+=("drain-both-drained=$(ms_since "$t0")ms")
  sleep 2
  check "the pod pinned to $a is still not bound (the node is empty but drained)" test -z "$(pod_field $ns pinned-0 '{.spec.nodeName}')"
  # Rolling-upgrade waves (tidalctl waves) over the same engine: one wave per NVLink domain.
  local waves
  waves=$("$TIDAL_E2E_BIN/tidalctl" waves --engine "unix://$BASE/run/engine.sock" --domain nvlink 2>&1 || echo "exit $?")
  check "tidalctl waves --domain nvlink lists the waves, $a and $b in one (their NVLink domain)" \
    eval "grep -q '^wave 1: domain ' <<<\"\$waves\" && grep '  nodes:' <<<\"\$waves\" | grep -q \" $a .*$b\\| $b .*$a\""
  grep -c '^wave ' <<<"$waves" | sed 's/^/    waves: /' >&2
  local rc=0
  "$TIDAL_E2E_BIN/tidalctl" waves --engine "unix://$BASE/run/engine.sock" >/dev/null 2>&1 || rc=$?
  check "tidalctl waves with neither --max-nodes nor --domain exits 2 (got $rc)" test "$rc" = 2
  events $ns FailedScheduling | grep pinned-0 | tail -n 1 | cut -f3 | cut -c1-220 | sed 's/^/    event: /' >&2

  if out=$(drain_ctl --cancel "$a" "$b" 2>&1); then
    check "tidalctl drain --cancel $a $b" true
  else
    fail "tidalctl drain --cancel $a $b: $out"
  fi
  t0=$(e2e_now_ms)
  check "after the cancel the pinned pod binds on $a within 15 s" until_true 15 pod_field_is $ns pinned-0 '{.status.phase}' Running
  timings+=("drain-cancel-to-bound=$(ms_since "$t0")ms")
  check "the status no longer lists $a or $b" eval "[ -z \"\$(drain_state $a)\$(drain_state $b)\" ]"
  # Running the waves (tidalctl waves --run): one node per wave, pinned-0 (no runtime limit) on $a.
  local hook=$BASE/waves-hook.sh hooklog=$BASE/waves-hook.log want got
  rm -f "$hooklog"
  {
    echo '#!/bin/bash'
    echo '# the "upgrade": records each node it is given and its drain state while it runs'
    echo "for n in \"\$@\"; do"
    echo "  echo \"\$n \$('$TIDAL_E2E_BIN/tidalctl' drain --engine 'unix://$BASE/run/engine.sock' | awk -v n=\"\$n\" '\$1 == n {print \$2}')\""
    echo "done >>'$hooklog'"
  } >"$hook"
  chmod +x "$hook"
  rc=0
  t0=$(e2e_now_ms)
  waves=$("$TIDAL_E2E_BIN/tidalctl" waves --engine "unix://$BASE/run/engine.sock" "$a" "$b" --max-nodes 1 --run --by 5s \
    --exec "$hook" 2>&1) || rc=$?
  sed 's/^/    waves --run: /' <<<"$waves" >&2
  timings+=("waves-run=$(ms_since "$t0")ms")
  check "tidalctl waves --run over $a and $b exits 0 (got $rc)" test "$rc" = 0
  want=$(printf '%s drained\n' "$a" "$b" | sort | tr '\n' ' ')
  got=$(sort "$hooklog" 2>/dev/null | tr '\n' ' ')
  check "  the upgrade ran once per wave, on one node each, while it was drained ($got)" test "$got" = "$want"
  check "  pinned-0 on $a was taken off for its wave (TidalDisrupted naming drain)" \
    until_true 5 has_event $ns TidalDisrupted pinned-0 ': drain: '
  check "  no drain is left on $a or $b" eval "[ -z \"\$(drain_state $a)\$(drain_state $b)\" ]"
  rc=0
  "$TIDAL_E2E_BIN/tidalctl" waves --engine "unix://$BASE/run/engine.sock" "$b" --max-nodes 1 --run --by 5s --exec false \
    >/dev/null 2>&1 || rc=$?
  check "a wave whose upgrade fails stops the run (exit 1, got $rc) and leaves $b drained" \
    eval "[ $rc = 1 ] && drain_state_is $b drained"
  drain_ctl --cancel "$b" >/dev/null 2>&1 || true
  rc=0
  "$TIDAL_E2E_BIN/tidalctl" waves --engine "unix://$BASE/run/engine.sock" --max-nodes 1 --exec true >/dev/null 2>&1 || rc=$?
  check "tidalctl waves --exec without --run exits 2 (got $rc)" test "$rc" = 2
  for p in "$a" "$b"; do drain_ctl --cancel "$p" >/dev/null 2>&1 || true; done  # whatever failed above
  cleanup_ns $ns
}
