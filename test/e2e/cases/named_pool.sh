# shellcheck shell=bash
# e2e case named-pool (sourced by run.sh, which provides k, check, fail, until_true, new_ns,
# cleanup_ns, restart_engine, pods, running, has_event, $BASE, $E2E_DIR): a named pool on the real
# control plane. Nodes node-60..63 are labelled tidal.dev/pool=inference; the engine runs with
# queues inference and batch and pools {inference: {queues: [inference], idleSeconds: 3,
# graceCapSeconds: 5}}. All pods are pinned to node-60 (kubernetes.io/hostname).
#   (1) A non-preemptible batch pod is not bound: its FailedScheduling says the node belongs to a
#       named pool of other queues.
#   (2) A preemptible batch pod that checkpoints on 60 s notice: once node-60 has been idle 3 s the
#       pool lends it and the pod runs (tidal_pool_lent_gpus{from="inference",to="others"} 8); the
#       rigid batch pod still waits (lent to preemptible work only).
#   (3) An inference pod arrives: the pool reclaims node-60 (the borrower's notice capped at the 5 s
#       grace cap, cause reclaim), the borrower goes and the inference pod runs within the grace cap
#       + 5 s (printed); tidal_pool_reclaims_total{from="inference",to="others"} grew by 1; the
#       rigid batch pod never ran.
# The labels are removed and the usual engine config restored afterwards. About 20 s.
MORE_CASES+=(named-pool)

np_metric() {  # np_metric NAME-WITH-LABELS: the engine's value (0 if absent)
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" | awk -v m="$1" 'index($0, m " ") == 1 {v = $2} END {print v + 0}'
}

np_phase() { k get pod -n "$1" "$2" -o jsonpath='{.status.phase}' 2>/dev/null; }
np_bound() { [ -n "$(k get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}' 2>/dev/null)" ]; }

case_named-pool() {
  local ns=e2e-named-pool cfg=$BASE/engine-named-pool.yaml p="${TIDAL_E2E_NODE_PREFIX:-node-}" node sel r0 t0 ms cap=5 nodes=""
  node=${p}60
  for i in 60 61 62 63; do nodes+="$p$i "; done
  sel="{\"kubernetes.io/hostname\": \"$node\"}"
  new_ns $ns
  { cat "$E2E_DIR/config/engine.yaml"
    printf 'queues:\n  - {name: default}\n  - {name: inference}\n  - {name: batch}\n'
    printf 'pools:\n  inference: {queues: [inference], idleSeconds: 3, graceCapSeconds: %d}\n' "$cap"; } >"$cfg"
  # shellcheck disable=SC2086
  k label nodes $nodes tidal.dev/pool=inference --overwrite >/dev/null
  restart_engine "$cfg" || { fail "engine restart with the named-pool config failed"; return; }
  r0=$(np_metric 'tidal_pool_reclaims_total{from="inference",to="others"}')

  # (1) Other queues' work does not land on the pool's node.
  pods $ns rigid 1 8 tidal-scheduler '{"tidal.dev/queue": "batch"}' '{}' "$sel" | k create -f - >/dev/null
  check "the rigid batch pod's FailedScheduling names the named pool" until_true 15 \
    has_event $ns FailedScheduling "belong to a named pool of other queues"
  # (2) Idle, the node is lent to other queues' preemptible work.
  pods $ns borrower 1 8 tidal-scheduler '{"tidal.dev/queue": "batch", "tidal.dev/preemptible": "true"}' \
    '{"tidal.dev/checkpoint-on-notice": "60s"}' "$sel" | k create -f - >/dev/null
  check "the preemptible batch pod runs on the lent node" until_true 30 eval "[ \"\$(np_phase $ns borrower-0)\" = Running ]"
  check "tidal_pool_lent_gpus{from=\"inference\",to=\"others\"} is 8" \
    until_true 10 eval "[ \"\$(np_metric 'tidal_pool_lent_gpus{from=\"inference\",to=\"others\"}')\" = 8 ]"
  check "the rigid batch pod still waits" eval "! np_bound $ns rigid-0"
  # (3) The owner's pod takes its node back.
  t0=$(e2e_now_ms)
  pods $ns serve 1 8 tidal-scheduler '{"tidal.dev/queue": "inference"}' '{}' "$sel" | k create -f - >/dev/null
  check "the inference pod runs on its pool's node" until_true $((cap + 20)) eval "[ \"\$(np_phase $ns serve-0)\" = Running ]"
  ms=$(ms_since "$t0")
  timings+=("named-pool-reclaim-to-running=${ms}ms")
  e2e_log "  inference pod -> running on its reclaimed node: ${ms} ms (grace cap ${cap} s, the borrower asked 60 s)"
  check "within the grace cap + 5 s (${ms} ms)" test "$ms" -le $(((cap + 5) * 1000))
  check "the borrower is gone" eval "[ \"\$(np_phase $ns borrower-0)\" != Running ]"
  check "tidal_pool_reclaims_total{from=\"inference\",to=\"others\"} grew by 1" \
    eval "[ \"\$(np_metric 'tidal_pool_reclaims_total{from=\"inference\",to=\"others\"}')\" = $((r0 + 1)) ]"
  check "the rigid batch pod never ran" eval "! np_bound $ns rigid-0"
  cleanup_ns $ns
  # shellcheck disable=SC2086
  k label nodes $nodes tidal.dev/pool- >/dev/null 2>&1 || true
  restart_engine "$E2E_DIR/config/engine.yaml"
}
