# shellcheck shell=bash
# e2e case headroom (sourced by run.sh, which provides k, check, fail, until_true, running, events,
# has_event, new_ns, cleanup_ns, restart_engine, $BASE, $E2E_DIR, $E2E_LIB): an inference
# Deployment's headroom is lent to preemptible batch and comes back when it scales up.
#
# The engine runs with queues inference (headroom: 80 GPUs = 10 replicas x 8, graceCapSeconds 5)
# and batch (no quota). kube-controller-manager (Deployments, ReplicaSets) is started unless it runs.
#   (1) Deployment serve (queue inference, 8 GPUs a replica) at 2 replicas; 54 non-preemptible batch
#       pods fill 432 of the 512 GPUs and a 55th stays pending, its FailedScheduling naming the
#       headroom (the 64 GPUs the queue keeps); 8 preemptible batch pods that checkpoint on 60 s
#       notice fill those 64 GPUs.
#   (2) serve scaled from 2 to 10: the 8 new replicas take the room back from the preemptible pods
#       (their notice capped at the 5 s grace cap) and all 10 run; the time from the scale-up to the
#       last replica running is printed and must be at most the grace cap + 1 s + 1 s (the API
#       round trips and KWOK's start). The rigid batch pods all keep running; the 55th stays
#       pending. tidal_preemptions_total{reason="reclaim"} grows by 8.
#   Alone: test/e2e/run.sh headroom
MORE_CASES+=(headroom)

hr_metric() {  # hr_metric NAME-WITH-LABELS: the engine's value (0 if absent)
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" | awk -v m="$1" 'index($0, m " ") == 1 {v = $2} END {print v + 0}'
}

hr_deployment() {  # hr_deployment NS REPLICAS: Deployment serve (queue inference, 8 GPUs a replica)
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve, tidal.dev/queue: inference}}
    spec:
      schedulerName: tidal-scheduler
      terminationGracePeriodSeconds: 0
      containers:
        - name: main
          image: fake.invalid/serve:1
          resources:
            requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "8"}
            limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "8"}
YAML
}

case_headroom() {
  local ns=e2e-headroom cfg=$BASE/engine-headroom.yaml kcm=0 t0 ms r0 cap=5
  new_ns $ns
  { cat "$E2E_DIR/config/engine.yaml"
    printf 'queues:\n  - {name: default}\n  - {name: inference, headroom: {gpus: 80, graceCapSeconds: %d}}\n  - {name: batch}\n' "$cap"; } >"$cfg"
  restart_engine "$cfg" || { fail "engine restart with the headroom config failed"; return; }
  if ! e2e_alive "$BASE" kube-controller-manager; then
    if TIDAL_E2E_KCM_CONTROLLERS=deployment-controller,replicaset-controller,garbage-collector-controller \
      "$E2E_LIB/kcm-up.sh" "$BASE" >&2; then
      kcm=1
    else
      fail "kube-controller-manager (Deployments) did not start"; restart_engine "$E2E_DIR/config/engine.yaml"; return
    fi
  fi

  # (1) The headroom is kept from rigid work and lent to preemptible work.
  hr_deployment $ns 2 | k apply -f - >/dev/null
  check "serve runs 2 replicas" until_true 30 all_running $ns 2 app=serve
  pods $ns rigid 54 8 tidal-scheduler '{"tidal.dev/queue": "batch", "role": "rigid"}' | k create -f - >/dev/null
  check "54 rigid batch pods run (432 GPUs)" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 54 role=rigid
  pods $ns extra 1 8 tidal-scheduler '{"tidal.dev/queue": "batch", "role": "extra"}' | k create -f - >/dev/null
  check "a 55th rigid pod waits: FailedScheduling names the headroom" until_true 20 \
    has_event $ns FailedScheduling "extra-0" "queue inference keeps room to grow to 80 GPUs"
  pods $ns filler 8 8 tidal-scheduler '{"tidal.dev/queue": "batch", "tidal.dev/preemptible": "true", "role": "filler"}' \
    '{"tidal.dev/checkpoint-on-notice": "60s"}' | k create -f - >/dev/null
  check "8 preemptible pods fill the 64 GPUs kept" until_true 30 all_running $ns 8 role=filler
  sleep 1.5  # preemption.minRuntime is 1 s here

  # (2) The scale-up takes the room back.
  r0=$(hr_metric 'tidal_preemptions_total{reason="reclaim"}')
  t0=$(e2e_now_ms)
  k scale deployment serve -n $ns --replicas=10 >/dev/null
  check "serve scaled to 10 runs all 10" until_true 60 all_running $ns 10 app=serve
  ms=$(ms_since "$t0")
  timings+=("headroom-scale-2-to-10-running=${ms}ms")
  e2e_log "  scale 2 -> 10: all replicas running after ${ms} ms (grace cap ${cap} s)"
  check "within the grace cap + 2 s (${ms} ms)" test "$ms" -le $(((cap + 2) * 1000))
  check "the rigid batch pods all still run" all_running $ns 54 role=rigid
  check "the fillers were the ones to go ($(running $ns role=filler) left)" test "$(running $ns role=filler)" -eq 0
  check "the 55th rigid pod still waits" test "$(running $ns role=extra)" -eq 0
  check "tidal_preemptions_total{reason=\"reclaim\"} grew by 8 ($r0 -> $(hr_metric 'tidal_preemptions_total{reason="reclaim"}'))" \
    until_true 5 eval "[ \"\$(hr_metric 'tidal_preemptions_total{reason=\"reclaim\"}')\" -ge $((r0 + 8)) ]"
  k delete deployment serve -n $ns --wait=false >/dev/null 2>&1 || true
  cleanup_ns $ns
  if [ "$kcm" = 1 ]; then e2e_stop "$BASE" kube-controller-manager 10 || true; fi
  restart_engine "$E2E_DIR/config/engine.yaml"
}
