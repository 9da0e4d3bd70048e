# shellcheck shell=bash
# e2e case elastic (sourced by run.sh, which provides k, check, fail, until_true, running, bound,
# events, no_event, new_ns, cleanup_ns, pod_field, e2e_pods, $BASE): a bound elastic gang is a
# preemption victim that gives back only its surplus members, the newest first, and grows back.
#
# On one NVLink domain (node-28's, 4 nodes in the default fabric; nodeSelector, so no other node is
# touched; no other case pins it): a preemptible elastic gang "el" (tidal.dev/gang-size 4,
# tidal.dev/gang-min 2, 8 GPUs each) fills the domain, its members created one by one about 1.2 s
# apart so their status.startTime order is well defined. A priority-1000 2-pod gang "hi" (8 GPUs
# each) pinned to the domain arrives: the engine shrinks el by 2 (ShrinkPodsLocked: the two newest
# members) instead of evicting it whole. Asserted: the preemptor's TidalPreempting event names
# exactly those two, the engine's decision says shrinks ["el -2"] and victims [], they are gone,
# the two oldest keep running the whole time (sampled every 0.2 s until hi runs and 3 s more), hi
# runs whole, tidal_disruptions_total{cause="preemption"} grew by exactly 1 and
# tidal_gangs_requeued_whole_total{cause="preemption"} did not grow. Grow back: two new members
# (same labels and annotations, new names, as a Job controller would create them) wait while hi
# runs; once hi's pods are gone they still wait 3 s later (hysteresis: the room must stay free for
# elastic.growAfterSeconds, 5 s in the e2e engine config, so a restart is not paid for every bit of
# room), then bind within 60 s and el runs 4 members again (the time is printed: "elastic: grew back
# in N s"). preemption.minRuntime is 1 s in the e2e engine config. About 30 s.
MORE_CASES+=(elastic)

elastic_metric() {  # elastic_metric NAME CAUSE: the engine's counter NAME{cause=CAUSE} (0 if none)
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" |
    awk -v m="$1{" -v c="cause=\"$2\"" 'index($0, m) == 1 && index($0, c) {v += $2} END {print v + 0}'
}

elastic_alive() {  # elastic_alive NS POD...: each POD exists, Running, not terminating
  local ns=$1 p; shift
  for p in "$@"; do
    [ "$(pod_field "$ns" "$p" '{.status.phase}/{.metadata.deletionTimestamp}' 2>/dev/null)" = Running/ ] || return 1
  done
}

elastic_gone() {  # elastic_gone NS POD...: none of the PODs exists any more
  local ns=$1 p; shift
  for p in "$@"; do [ -z "$(k get pod -n "$ns" "$p" -o name 2>/dev/null)" ] || return 1; done
}

elastic_nodes() {  # elastic_nodes NS: distinct nodes el's pods are bound to
  k get pods -n "$1" -l tidal.dev/gang=el -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c . || true
}

# elastic_pods NS NAME...: el's members NAME (preemptible, gang-size 4, gang-min 2, 8 GPUs) on $sel
elastic_pods() {
  local ns=$1 n; shift
  for n in "$@"; do
    e2e_pods "$ns" el 1 8 tidal-scheduler '{"tidal.dev/gang": "el"}' \
      '{"tidal.dev/gang-size": "4", "tidal.dev/gang-min": "2", "tidal.dev/preemptible": "true"}' "$sel" |
      sed "s/\"name\": \"el-0\"/\"name\": \"$n\"/"
  done
}

case_elastic() {
  local ns=e2e-elastic dom n sel i order old new victims ev log t0 ms ok whole0 whole1 dis0 dis1 gone_at grown
  new_ns $ns
  dom=$(k get node "${TIDAL_E2E_NODE_PREFIX:-node-}28" -o jsonpath='{.metadata.labels.topology\.tidal\.dev/nvlink}' 2>/dev/null || true)
  n=0; [ -z "$dom" ] || n=$(k get nodes -l "topology.tidal.dev/nvlink=$dom" -o name | grep -c . || true)
  if [ "$n" -ne 4 ]; then
    fail "the case needs node-28's NVLink domain to hold 4 nodes (got '$dom': $n)"
    return 0
  fi
  sel="{\"topology.tidal.dev/nvlink\": \"$dom\"}"

  # 1. el fills the domain, one member at a time (el-0 waits for el-1: gang-min 2).
  for i in 0 1 2 3; do
    elastic_pods $ns "el-$i" | k create -f - >/dev/null
    [ "$i" = 0 ] && continue
    check "el-$i runs ($((i + 1)) of el's 4 members in $dom)" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns $((i + 1)) tidal.dev/gang=el
    sleep 1.2  # start times one second apart at least (status.startTime has seconds)
  done
  check "el runs 4 members on 4 distinct nodes" test "$(elastic_nodes $ns)" -eq 4
  order=$(k get pods -n $ns -l tidal.dev/gang=el -o jsonpath='{range .items[*]}{.status.startTime}{" "}{.metadata.name}{"\n"}{end}' | sort)
  e2e_log "  el by start time: $(echo "$order" | tr '\n' ';')"
  old=$(echo "$order" | head -n 2 | awk '{print $2}' | tr '\n' ' ')
  new=$(echo "$order" | tail -n 2 | awk '{print $2}' | sort | tr '\n' ' ')
  check "two newest members well defined (oldest: $old; newest: $new)" \
    test "$(echo "$order" | sed -n 2p | cut -d' ' -f1)" \< "$(echo "$order" | sed -n 3p | cut -d' ' -f1)"
  # shellcheck disable=SC2086
  set -- $new
  local n1=$1 n2=$2
  # shellcheck disable=SC2086
  set -- $old
  local o1=$1 o2=$2
  sleep 0.5  # the engine hears of the bindings through the Sync stream
  whole0=$(elastic_metric tidal_gangs_requeued_whole_total preemption)
  dis0=$(elastic_metric tidal_disruptions_total preemption)

  # 2. hi needs 2 whole nodes of the full domain.
  E2E_POD_PRIORITY=1000 e2e_pods $ns hi 2 8 tidal-scheduler '{"tidal.dev/gang": "hi"}' '{"tidal.dev/gang-size": "2"}' "$sel" |
    k create -f - >/dev/null
  t0=$(e2e_now_ms)
  ok=1
  # 3. The two oldest keep running the whole time: sampled until hi runs whole, and 3 s more.
  while ! all_running $ns 2 tidal.dev/gang=hi; do
    elastic_alive $ns "$o1" "$o2" || { ok=0; break; }
    [ "$(ms_since "$t0")" -lt $((TIDAL_E2E_TIMEOUT * 1000)) ] || break
    sleep 0.2
  done
  check "the higher-priority gang hi runs whole in $dom" all_running $ns 2 tidal.dev/gang=hi
  ms=$(ms_since "$t0")
  timings+=("elastic-preemptor-running=${ms}ms")
  t0=$(e2e_now_ms)
  while [ "$ok" = 1 ] && [ "$(ms_since "$t0")" -lt 3000 ]; do
    elastic_alive $ns "$o1" "$o2" || ok=0
    sleep 0.2
  done
  check "el's oldest members $o1 $o2 kept running the whole time (never terminating)" test "$ok" = 1
  check "el's newest members $n1 $n2 are gone" until_true 10 elastic_gone $ns "$n1" "$n2"
  check "exactly 2 of el's pods left" test "$(k get pods -n $ns -l tidal.dev/gang=el -o name | grep -c .)" -eq 2
  ev=$(events $ns TidalPreempting | grep -F 'tidal-engine preempts' | head -n 1 | cut -f3)
  e2e_log "  event: ${ev:0:220}"
  victims=$(grep -o "$ns/el-[0-9]*" <<<"$ev" | sort -u | tr '\n' ' ')
  check "the TidalPreempting event names exactly the two newest ($victims)" test "$victims" = "$ns/$n1 $ns/$n2 "
  check "tidal_disruptions_total{cause=\"preemption\"} grew by 1" \
    until_true 10 eval "[ \"\$(awk -v a=\"\$(elastic_metric tidal_disruptions_total preemption)\" -v b=$dis0 'BEGIN {print (a == b + 1)}')\" = 1 ]"
  sleep 1  # anything counted late would show now
  dis1=$(elastic_metric tidal_disruptions_total preemption)
  whole1=$(elastic_metric tidal_gangs_requeued_whole_total preemption)
  e2e_log "  tidal_disruptions_total{cause=\"preemption\"}: $dis0 -> $dis1; tidal_gangs_requeued_whole_total{cause=\"preemption\"}: $whole0 -> $whole1"
  check "still grown by exactly 1 ($dis0 -> $dis1)" awk -v a="$dis1" -v b="$dis0" 'BEGIN {exit !(a == b + 1)}'
  check "tidal_gangs_requeued_whole_total{cause=\"preemption\"} did not grow ($whole0 -> $whole1): no whole-gang kill" \
    awk -v a="$whole1" -v b="$whole0" 'BEGIN {exit !(a == b)}'
  log=$(grep -F '"outcome":"preempting"' "$BASE/log/tidal-engine.log" | grep -F "\"workload\":\"$ns/hi\"" | head -n 1)
  e2e_log "  decision: ${log:0:220}"
  check "the engine's decision shrinks el by 2 and evicts no workload whole" \
    eval "grep -qF '\"shrinks\":[\"$ns/el -2\"]' <<<\"\$log\" && grep -qF '\"victims\":[]' <<<\"\$log\""
  check "no TidalDisrupted event for el's oldest members" eval "no_event $ns TidalDisrupted $o1 && no_event $ns TidalDisrupted $o2"

  # 4. Grow back: two new members as a Job controller would create them; they wait while hi runs.
  elastic_pods $ns el-4 el-5 | k create -f - >/dev/null
  sleep 3
  check "the two new members el-4 el-5 wait while hi holds the nodes" test "$(bound $ns tidal.dev/gang=el)" -eq 2
  k delete pods -n $ns -l tidal.dev/gang=hi --wait=false >/dev/null
  check "hi's pods are gone" until_true 15 eval "[ -z \"\$(k get pods -n $ns -l tidal.dev/gang=hi -o name)\" ]"
  gone_at=$(e2e_now_ms)
  sleep 3
  check "el-4 and el-5 still wait 3 s after hi is gone (the room must stay free 5 s first)" \
    test "$(bound $ns tidal.dev/gang=el)" -eq 2
  check "the engine says why: the elastic gang grows once the room stays free" \
    until_true 5 has_event $ns FailedScheduling el-4 "once the room stays free"
  check "el-4 and el-5 bind within 60 s of hi being gone" until_true 60 elastic_alive $ns el-4 el-5
  ms=$(ms_since "$gone_at")
  grown=$(awk -v m="$ms" 'BEGIN {printf "%.1f", m / 1000}')
  e2e_log "  elastic: grew back in $grown s"
  timings+=("elastic-grow-back=${ms}ms")
  check "el runs 4 members again ($o1 $o2 el-4 el-5), on 4 distinct nodes of $dom" \
    eval "elastic_alive $ns $o1 $o2 el-4 el-5 && [ \"\$(elastic_nodes $ns)\" -eq 4 ]"
  cleanup_ns $ns
}
