# shellcheck shell=bash
# Sourced by run.sh. Case soak: the short, bounded version of `make soak` (hack/soak.sh,
# lib/soak.sh) on the run's cluster: a warm-standby pair (profile tidal-ha) under steady arrivals
# and completions of gangs for SOAK_CASE_S seconds (50), with a kill -9 (the leader's or the
# standby's engine or scheduler, each once, then at random) every 3-9 s (SOAK_CASE_KILL_MEAN_S, 6) and one kube-apiserver restart
# half-way. Passes when no gang is partial, no pod is bound twice, no node is over-committed and no
# pod is lost once the load has settled; every killed engine is synced again within
# SOAK_CASE_RESYNC_MAX_S (10) of its restart. The summary (resync and failover times, RSS) is
# printed. Time: about 60 s (50 s of load, then the settle).
source "$E2E_LIB/soak.sh"
MORE_CASES+=(soak)
FINISH_HOOKS+=(soak_stop_background)

case_soak() {
  local ns=e2e-soak out=$BASE/soak t0 max
  new_ns $ns
  t0=$(e2e_now_ms)
  if SOAK_KILL_MEAN_S=${SOAK_CASE_KILL_MEAN_S:-6} soak_run "$BASE" $ns "${SOAK_CASE_S:-50}" "$out"; then
    check "the soak ran: $(grep -c . "$out/chaos") kills, kube-apiserver restarted ($(cat "$out/apiserver" 2>/dev/null | awk '{print $2 - $1}') ms down)" \
      test -s "$out/apiserver"
  else
    fail "the soak run stopped early (a process did not come back)"
  fi
  if soak_report "$BASE" $ns "$out"; then
    check "no partial gang, no pod bound twice, no node over-committed, no lost pod" true
  else
    fail "an invariant broke: $(grep -E '^(lost|partial_gangs|bound_twice|overcommitted)=' "$out/summary" | tr '\n' ' ')"
  fi
  check "every pod ends bound ($(grep '^pending_at_end=' "$out/summary"))" grep -q '^pending_at_end=0$' "$out/summary"
  max=$(awk '$1 == "engine" { d = $6 - $5; if (d > m) m = d } END { print m + 0 }' "$out/chaos")
  check "every killed engine is synced again within ${SOAK_CASE_RESYNC_MAX_S:-10} s of its restart (max ${max} ms)" \
    test "$max" -lt $(( ${SOAK_CASE_RESYNC_MAX_S:-10} * 1000 ))
  timings+=("soak=$(ms_since "$t0")ms")
  soak_stop_background
  local i
  for i in 0 1; do e2e_stop "$BASE" "ha-$i-scheduler" 5; e2e_stop "$BASE" "ha-$i-engine" 5; done
  k delete lease -n default "$HA_LEASE" --ignore-not-found >/dev/null 2>&1 || true
  cleanup_ns $ns
}
