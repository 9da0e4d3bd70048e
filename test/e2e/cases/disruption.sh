# shellcheck shell=bash
# e2e case disruption (sourced by run.sh, which provides k, check, fail, until_true, bound, events,
# has_event, new_ns, cleanup_ns, pod_field, $BASE): the one disruption path with a victim that
# checkpoints on notice.
#
# On one NVLink domain (the nodes of node-20's, 4 in the default fabric; nodeSelector, so no other
# node is touched): a preemptible 2-pod gang "ckpt" with tidal.dev/checkpoint-on-notice: 60s runs;
# a higher-priority gang "high" needing every node of the domain arrives. PostFilter does not
# evict ckpt: its pods get the notice (annotation tidal.dev/disruption-notice = the deadline, about
# 60 s away; cause preemption; condition DisruptionTarget, reason TidalDisruptionNotice), and 5 s
# later they still run. The test then writes tidal.dev/last-checkpoint (now) on ckpt-0 as the job
# would: the engine's Disruptions answers EVICT, the shim evicts the gang whole within 15 s
# (TidalDisrupted), high binds, and tidal_disruptions_total{cause="preemption"} grew.
# preemption.minRuntime is 1 s in the e2e engine config. About 25 s.
MORE_CASES+=(disruption)

disruption_metric() {  # disruption_metric CAUSE: tidal_disruptions_total{cause=CAUSE} (0 if none)
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" |
    awk -v c="cause=\"$1\"" 'index($0, "tidal_disruptions_total{") == 1 && index($0, c) {v += $2} END {print v + 0}'
}

disruption_noticed() {  # disruption_noticed NS POD: the notice annotations and condition are there
  local ann cause cond
  ann=$(pod_field "$1" "$2" '{.metadata.annotations.tidal\.dev/disruption-notice}')
  cause=$(pod_field "$1" "$2" '{.metadata.annotations.tidal\.dev/disruption-cause}')
  cond=$(pod_field "$1" "$2" '{.status.conditions[?(@.type=="DisruptionTarget")].status}/{.status.conditions[?(@.type=="DisruptionTarget")].reason}')
  [ -n "$ann" ] && [ "$cause" = preemption ] && [ "$cond" = True/TidalDisruptionNotice ]
}

disruption_untouched() {  # disruption_untouched NS SELECTOR N: N pods, Running, none terminating
  [ "$(running "$1" "$2")" -eq "$3" ] && [ "$(k get pods -n "$1" -l "$2" -o name | grep -c .)" -eq "$3" ] &&
    [ -z "$(k get pods -n "$1" -l "$2" -o jsonpath='{.items[*].metadata.deletionTimestamp}')" ]
}

case_disruption() {
  local ns=e2e-disruption dom n sel before after t0 ms deadline left p
  new_ns $ns
  dom=$(k get node "${TIDAL_E2E_NODE_PREFIX:-node-}20" -o jsonpath='{.metadata.labels.topology\.tidal\.dev/nvlink}' 2>/dev/null || true)
  [ -n "$dom" ] || dom=nvlink-0
  n=$(k get nodes -l "topology.tidal.dev/nvlink=$dom" -o name | grep -c . || true)
  if [ "$n" -lt 3 ]; then
    fail "NVLink domain $dom has $n nodes; the case needs at least 3"
    return 0
  fi
  sel="{\"topology.tidal.dev/nvlink\": \"$dom\"}"
  e2e_pods $ns ckpt 2 8 tidal-scheduler '{"tidal.dev/gang": "ckpt"}' \
    '{"tidal.dev/gang-size": "2", "tidal.dev/preemptible": "true", "tidal.dev/checkpoint-on-notice": "60s"}' "$sel" |
    k create -f - >/dev/null
  check "gang ckpt (2 pods, checkpoint-on-notice 60s) runs in $dom" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 2 tidal.dev/gang=ckpt
  sleep 1.5  # preemption.minRuntime is 1 s here
  before=$(disruption_metric preemption)
  E2E_POD_PRIORITY=1000 e2e_pods $ns high "$n" 8 tidal-scheduler '{"tidal.dev/gang": "high"}' "{\"tidal.dev/gang-size\": \"$n\"}" "$sel" |
    k create -f - >/dev/null
  t0=$(e2e_now_ms)
  for p in ckpt-0 ckpt-1; do
    check "$p gets the notice (tidal.dev/disruption-notice, cause preemption, DisruptionTarget True/TidalDisruptionNotice)" \
      until_true 20 disruption_noticed $ns $p
  done
  timings+=("disruption-notice=$(ms_since "$t0")ms")
  deadline=$(pod_field $ns ckpt-0 '{.metadata.annotations.tidal\.dev/disruption-notice}')
  e2e_log "  notice: $deadline; $(pod_field $ns ckpt-0 '{.status.conditions[?(@.type=="DisruptionTarget")].message}')"
  left=$(( $(date -d "$deadline" +%s 2>/dev/null || echo 0) - $(date +%s) ))
  check "the deadline is about 60 s away (${left} s)" test "$left" -ge 40 -a "$left" -le 62
  check "a TidalDisruptionNotice event on ckpt-0" has_event $ns TidalDisruptionNotice ckpt-0 "evicted at $deadline at the latest"
  check "the preemptor's TidalPreempting event says ckpt got notice" has_event $ns TidalPreempting "got notice to checkpoint first"
  sleep 5
  check "5 s later gang ckpt still runs whole, nothing evicted" disruption_untouched $ns tidal.dev/gang=ckpt 2
  check "and high is not bound yet" test "$(bound $ns tidal.dev/gang=high)" -eq 0
  k annotate pod -n $ns ckpt-0 --overwrite "tidal.dev/last-checkpoint=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null
  t0=$(e2e_now_ms)
  check "after ckpt-0 reports a checkpoint, gang ckpt is evicted whole within 15 s" \
    until_true 15 eval "[ -z \"\$(k get pods -n $ns -l tidal.dev/gang=ckpt -o name)\" ]"
  ms=$(ms_since "$t0")
  timings+=("disruption-checkpoint-to-gone=${ms}ms")
  check "a TidalDisrupted event for each ckpt pod names the cause" \
    eval "has_event $ns TidalDisrupted ckpt-0 'preemption' && has_event $ns TidalDisrupted ckpt-1 'preemption'"
  events $ns TidalDisrupted | head -n 1 | cut -f3 | cut -c1-200 | sed 's/^/    event: /' >&2
  check "the higher-priority gang high runs whole in $dom" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns "$n" tidal.dev/gang=high
  timings+=("disruption-preemptor-running=$(ms_since "$t0")ms")
  check "tidal_disruptions_total{cause=\"preemption\"} grew" \
    until_true 10 eval "[ \"\$(awk -v a=\"\$(disruption_metric preemption)\" -v b=$before 'BEGIN {print (a > b)}')\" = 1 ]"
  after=$(disruption_metric preemption)
  e2e_log "  tidal_disruptions_total{cause=\"preemption\"}: $before -> $after"
  cleanup_ns $ns
}
