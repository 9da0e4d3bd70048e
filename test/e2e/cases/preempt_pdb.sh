# shellcheck shell=bash
# e2e case preempt-pdb (sourced by run.sh, which provides k, check, fail, until_true, bound, events,
# has_event, leaves, new_ns, cleanup_ns, $BASE, $E2E_LIB): preemption never breaks a gang that
# PodDisruptionBudgets protect.
#
# Four preemptible leaf gangs fill the 64 nodes: "free" first (it has run longest, so it loses the
# most work and is the engine's last choice), then keep1..keep3, each covered by a PDB with
# minAvailable 15 of its 16 pods (disruptionsAllowed 1: the Eviction API would take one pod and
# refuse the rest). A higher-priority leaf gang arrives. The shim checks every victim gang whole
# before the first eviction: the keep gangs are skipped and reported (TidalPreemptionBlocked), the
# engine chooses again, and "free" is evicted whole, each of its pods with a TidalDisrupted event
# naming the preemption and the preemptor; the keep gangs keep all 16 pods; the engine's
# tidal_preemptions_total grows by exactly one (evictions done, not proposals).
# PDB status needs kube-controller-manager's disruption controller: started here unless running,
# stopped again at the end (test/e2e/lib/kcm-up.sh).

preempt_pdb_metric() {  # preempt_pdb_metric REASON: tidal_preemptions_total{reason=REASON} (0 if none)
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" |
    awk -v r="reason=\"$1\"" 'index($0, "tidal_preemptions_total{") == 1 && index($0, r) {v = $2} END {print v + 0}'
}

preempt_pdb_allowed() {  # preempt_pdb_allowed NS PDB N: status.disruptionsAllowed is N
  [ "$(k get pdb -n "$1" "$2" -o jsonpath='{.status.disruptionsAllowed}' 2>/dev/null)" = "$3" ]
}

case_preempt-pdb() {
  local ns=e2e-preempt-pdb t0 g kcm=0 before after n whole=1
  new_ns $ns
  if ! e2e_alive "$BASE" kube-controller-manager; then
    if TIDAL_E2E_KCM_CONTROLLERS=disruption-controller,garbage-collector-controller "$E2E_LIB/kcm-up.sh" "$BASE" >&2; then
      kcm=1
    else
      fail "kube-controller-manager (disruption controller) did not start"
      return 0
    fi
  fi
  local leaf='"tidal.dev/topology-required": "leaf", "tidal.dev/preemptible": "true"'
  e2e_gang $ns free 16 8 "" "$leaf" | k create -f - >/dev/null
  check "gang free (no PDB) runs" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 tidal.dev/gang=free
  sleep 1.2  # free has run longest: it loses the most work, so the engine tries the keep gangs first
  for g in keep1 keep2 keep3; do
    e2e_gang $ns $g 16 8 "" "$leaf" | k create -f - >/dev/null
    printf '{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "%s", "namespace": "%s"},
 "spec": {"minAvailable": 15, "selector": {"matchLabels": {"tidal.dev/gang": "%s"}}}}\n' $g $ns $g | k create -f - >/dev/null
  done
  check "four preemptible leaf gangs fill all 64 nodes" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 64
  for g in keep1 keep2 keep3; do
    check "PDB $g allows exactly 1 disruption (minAvailable 15 of 16; disruption controller)" \
      until_true "$TIDAL_E2E_TIMEOUT" preempt_pdb_allowed $ns $g 1
  done
  sleep 1.2  # preemption.minRuntime is 1 s here
  before=$(preempt_pdb_metric priority)
  t0=$(e2e_now_ms)
  E2E_POD_PRIORITY=1000 e2e_gang $ns high 16 8 "" '"tidal.dev/topology-required": "leaf"' | k create -f - >/dev/null
  check "the higher-priority gang preempts and runs whole" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 tidal.dev/gang=high
  timings+=("preempt-pdb-gang16-running=$(ms_since "$t0")ms")
  check "inside one leaf ($(leaves $ns tidal.dev/gang=high | tr '\n' ' '))" test "$(leaves $ns tidal.dev/gang=high | grep -c .)" -eq 1
  check "the PDB-protected victims were skipped, with an event saying why (TidalPreemptionBlocked)" \
    has_event $ns TidalPreemptionBlocked "allows 1 disruption(s)"
  events $ns TidalPreemptionBlocked | head -n 1 | cut -f3 | cut -c1-200 | sed 's/^/    event: /' >&2
  check "gang free (no PDB) was evicted whole" until_true 10 eval "[ \$(k get pods -n $ns -l tidal.dev/gang=free -o name | grep -c .) -eq 0 ]"
  n=$(events $ns TidalDisrupted | grep -F "preemption: priority preemption by $ns/high-" | grep -F "(queue default)" | cut -f1 | grep '^free-' | sort -u | grep -c . || true)
  check "each evicted pod of free has a TidalDisrupted event naming the cause, the preemptor and its queue ($n of 16)" test "$n" -eq 16
  events $ns TidalDisrupted | head -n 1 | cut -f3 | cut -c1-200 | sed 's/^/    event: /' >&2
  sleep 1  # a broken gang would show by now
  for g in keep1 keep2 keep3; do
    n=$(k get pods -n $ns -l tidal.dev/gang=$g --field-selector=status.phase=Running -o name | grep -c . || true)
    [ "$n" -eq 16 ] || whole=0
    check "PDB-protected gang $g is untouched ($n of 16 running, none evicted)" test "$n" -eq 16
  done
  check "no pod of a protected gang was even asked to go (no deletion timestamps)" \
    test -z "$(k get pods -n $ns -l 'tidal.dev/gang in (keep1,keep2,keep3)' -o jsonpath='{.items[*].metadata.deletionTimestamp}')"
  after=$(preempt_pdb_metric priority)
  check "tidal_preemptions_total{reason=\"priority\"} grew by exactly 1 ($before -> $after): evictions done, not proposals" \
    test "$(awk -v a="$after" -v b="$before" 'BEGIN {print a - b}')" = 1
  [ "$whole" = 1 ] || e2e_log "  scheduler: $(grep -c 'victims protected by PodDisruptionBudgets' "$BASE/log/tidal-scheduler.log" || true) PDB skips logged"
  k delete pdb -n $ns --all >/dev/null 2>&1 || true
  cleanup_ns $ns
  if [ "$kcm" = 1 ]; then e2e_stop "$BASE" kube-controller-manager 10 || true; fi
}
MORE_CASES+=(preempt-pdb)
