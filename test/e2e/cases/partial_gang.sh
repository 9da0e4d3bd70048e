# shellcheck shell=bash
# e2e cases partial-gang and partial-gang-restart (sourced by run.sh, which provides k, check, fail,
# until_true, new_ns, cleanup_ns, pod_field, e2e_pods, restart_engine): a gang that an earlier
# scheduler bound in part, whose bound members finished before the rest were placed.
#
# What a leader killed mid-bind leaves behind (the `standby` case hits it about once in 16 runs):
# a 4-pod gang "half" is created in one request; half-0 and half-1 come already bound
# (spec.nodeName, as the dead leader's bindings), run 2 s and turn Succeeded; half-2 and half-3
# carry a scheduling gate, so no scheduler sees them until the first two are done. Then the gates
# are removed: Tidal must place the two members left (within 15 s), not wait for a gang of 4
# that can never form again (before the fix they stayed pending for good). About 8 s.
#
# partial-gang-restart: the same, but tidal-engine restarts after the two finished (not a
# failover: the new engine never saw them run, and kube-scheduler's informer no longer has them).
# The scheduler's resync names the finished members (shim/kube/pkg/engineclient/finished.go);
# before, the two left waited for good. About 15 s.
MORE_CASES+=(partial-gang partial-gang-restart)

case_partial-gang-restart() { partial_gang e2e-partial-gang-restart restart; }
case_partial-gang() { partial_gang e2e-partial-gang; }

# partial_gang NS [restart]
partial_gang() {
  local ns=$1 restart=${2:-} node=${TIDAL_E2E_NODE_PREFIX:-node-} t0 i wait_s=15
  new_ns $ns
  local labels='{"tidal.dev/gang": "half"}' ann='{"tidal.dev/gang-size": "4", "sim.tidal.dev/runtime": "2s"}'
  # Four pods in one list: half-0/1 bound to node-24/25, half-2/3 gated. The gated ones are created
  # first: the members an earlier scheduler bound started after every member of the gang existed
  # (the engine counts finished members of this run only: started no earlier than its pending
  # members were created). Created the other way round, half-0 could start in the second before
  # half-2 was created, and its finished record would rightly not count (a flaky failure once).
  e2e_pods $ns half 4 8 tidal-scheduler "$labels" "$ann" | python3 -c '
import json, sys
pods = json.load(sys.stdin)
for i, p in enumerate(pods["items"]):
    if i < 2:
        p["spec"]["nodeName"] = sys.argv[1] + str(24 + i)
    else:
        p["spec"]["schedulingGates"] = [{"name": "e2e.tidal.dev/hold"}]
pods["items"] = pods["items"][2:] + pods["items"][:2]
print(json.dumps(pods))' "$node" | k create -f - >/dev/null
  partial_done() { [ "$(pod_field $ns half-0 '{.status.phase}')" = Succeeded ] && [ "$(pod_field $ns half-1 '{.status.phase}')" = Succeeded ]; }
  check "the two members bound before ran and finished (Succeeded)" until_true 20 partial_done
  check "the two gated members are still pending, unbound" \
    eval "[ -z \"\$(pod_field $ns half-2 '{.spec.nodeName}')\$(pod_field $ns half-3 '{.spec.nodeName}')\" ]"
  if [ "$restart" = restart ]; then
    restart_engine "$E2E_DIR/config/engine.yaml"
    wait_s=30 # the scheduler reconnects (backoff) and resyncs first
  fi
  t0=$(e2e_now_ms)
  for i in 2 3; do
    k patch pod -n $ns half-$i --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates"}]' >/dev/null
  done
  partial_bound() { [ -n "$(pod_field $ns half-2 '{.spec.nodeName}')" ] && [ -n "$(pod_field $ns half-3 '{.spec.nodeName}')" ]; }
  if until_true $wait_s partial_bound; then
    timings+=("${ns#e2e-}-rest-bound=$(ms_since "$t0")ms")
    e2e_log "  ok: the two members left are placed (a gang of 2 more, not 4)"
  else
    fail "the two members left are placed within $wait_s s (a gang of 2 more, not 4); half-2's last events: $(k get events -n $ns \
      --field-selector involvedObject.name=half-2 -o jsonpath='{range .items[*]}{.reason}: {.message}; {end}' | tail -c 300)"
  fi
  cleanup_ns $ns
}
