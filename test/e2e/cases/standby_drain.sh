# shellcheck shell=bash
# Sourced by run.sh. Case standby-drain: a drain written on the Node object (the annotation
# tidal.dev/drain-by, docs/node-health.md "Drains") is shared by both replicas of a warm-standby pair
# (lib/ha.sh) and survives a failover, where a `tidalctl drain` lives in one engine only.
#
#   node-0 is annotated tidal.dev/drain-by=<now>. Both replicas' engines report it drained
#   (`tidalctl drain` against each engine's socket: STATE drained), each from its own scheduler's
#   informers; `tidalctl drain --cancel node-0` is refused (STATE annotated, exit 1). node-1 is
#   drained with `tidalctl drain` on the leader's engine only: the standby does not have that one.
#   The leader is killed (-9, scheduler and engine); once the other replica leads, its engine still
#   has node-0 drained, and a pod pinned to node-0 (nodeSelector kubernetes.io/hostname) stays
#   unbound while an unpinned pod binds. `kubectl annotate node node-0 tidal.dev/drain-by-`: the
#   pinned pod binds (the engine hands it back to kube-scheduler at once). A value that is not a time
#   gives the node a Warning event TidalDrainAnnotationInvalid.
# Time: about 20 s.
[ -n "$(type -t ha_start)" ] || source "$E2E_LIB/ha.sh"
MORE_CASES+=(standby-drain)

sd_tidalctl() { "$TIDAL_E2E_BIN/tidalctl" drain --engine "unix://$BASE/run/ha-$1/engine.sock" "${@:2}"; }
sd_state() {  # sd_state REPLICA NODE: its STATE in `tidalctl drain` of that replica's engine
  sd_tidalctl "$1" 2>/dev/null | awk -v n="$2" '$1 == n {print $2; exit}'
}

case_standby-drain() {
  local ns=e2e-standby-drain leader standby out rc t0
  new_ns $ns 2>/dev/null || true
  ha_archive_logs "$BASE"
  if ! ha_start "$BASE" 0 || ! ha_start "$BASE" 1; then
    fail "the two replicas did not start"; standby_drain_cleanup; return
  fi
  check "one replica takes the lease" until_true 30 ha_leader "$BASE"
  leader=$(ha_leader "$BASE") || { fail "no leader"; standby_drain_cleanup; return; }
  standby=$((1 - leader))
  k annotate node node-0 tidal.dev/drain-by="$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite >/dev/null
  check "the leader's engine has node-0 drained (its annotation)" until_true 10 eval "[ \"\$(sd_state $leader node-0)\" = drained ]"
  check "and so has the standby's, from its own informers" until_true 10 eval "[ \"\$(sd_state $standby node-0)\" = drained ]"
  out=$(sd_tidalctl "$leader" --cancel node-0 2>&1); rc=$?
  e2e_log "    tidalctl drain --cancel node-0: $(echo "$out" | awk '$1 == "node-0"' | cut -c1-160)"
  check "tidalctl drain --cancel on an annotated node is refused (STATE annotated, exit $rc)" \
    eval "[ $rc = 1 ] && echo \"\$out\" | grep -q '^node-0 *annotated'"
  check "node-0 is still drained" test "$(sd_state "$leader" node-0)" = drained
  sd_tidalctl "$leader" node-1 --by now >/dev/null
  check "an RPC drain of node-1 lives in the leader's engine only" \
    eval "[ \"\$(sd_state $leader node-1)\" = drained ] && [ -z \"\$(sd_state $standby node-1)\" ]"

  ha_kill "$BASE" "$leader" all >/dev/null
  check "replica $standby takes the lease" until_true 20 eval "[ \"\$(ha_leader '$BASE')\" = $standby ]"
  e2e_pods $ns pinned 1 8 "$HA_PROFILE" '{}' '{}' '{"kubernetes.io/hostname": "node-0"}' | k create -f - >/dev/null
  e2e_pods $ns free 1 8 "$HA_PROFILE" | k create -f - >/dev/null
  check "after the failover an unpinned pod binds" until_true 20 eval "[ -n \"\$(pod_field $ns free-0 '{.spec.nodeName}')\" ]"
  check "the new leader's engine has node-0 drained" test "$(sd_state "$standby" node-0)" = drained
  check "a pod pinned to node-0 is refused (FailedScheduling)" until_true 20 has_event $ns FailedScheduling "pinned-0"
  sleep 2
  check "and stays unbound: the new leader kept the drain" test -z "$(pod_field $ns pinned-0 '{.spec.nodeName}')"
  t0=$(e2e_now_ms)
  k annotate node node-0 tidal.dev/drain-by- >/dev/null
  check "the annotation removed, the pinned pod binds to node-0" until_true 20 pod_field_is $ns pinned-0 '{.spec.nodeName}' node-0
  timings+=("standby-drain-undrained-bound=$(ms_since "$t0")ms")
  k annotate node node-2 tidal.dev/drain-by=tomorrow --overwrite >/dev/null
  check "a drain-by that is not a time: a Warning event TidalDrainAnnotationInvalid on node-2" until_true 10 \
    eval "k get events -A --field-selector reason=TidalDrainAnnotationInvalid -o jsonpath='{.items[*].message}' | grep -q tomorrow"
  check "and node-2 is not drained" test -z "$(sd_state "$standby" node-2)"
  standby_drain_cleanup
}

standby_drain_cleanup() {
  local i
  for i in 0 1; do e2e_stop "$BASE" "ha-$i-scheduler" 5; e2e_stop "$BASE" "ha-$i-engine" 5; done
  k delete lease -n default "$HA_LEASE" --ignore-not-found >/dev/null 2>&1 || true
  k annotate node node-0 node-2 tidal.dev/drain-by- >/dev/null 2>&1 || true
  cleanup_ns e2e-standby-drain
}
