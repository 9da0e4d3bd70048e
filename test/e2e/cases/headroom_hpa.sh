# shellcheck shell=bash
# e2e case headroom-hpa (sourced by run.sh, which provides k, check, fail, until_true, running,
# has_event, new_ns, cleanup_ns, restart_engine, $BASE, $E2E_DIR): an inference queue's headroom
# derived from an HPA (queues[].headroom.fromHPA), the HPA as tidal-scheduler watches it on the
# real API server and streams it to the engine.
#
# The engine runs with queues inference (headroom: {fromHPA: true, graceCapSeconds: 5}) and batch.
# Deployment serve (queue inference, 8 GPUs a replica, 0 replicas: no controller needed) and an
# autoscaling/v2 HPA on it with maxReplicas 10 (no metrics server: the object alone is enough).
#   (1) tidal_queue_headroom_gpus{queue="inference"} is 80; 54 rigid batch pods run (432 of 512
#       GPUs); a 55th waits, its FailedScheduling naming the headroom and where it came from
#       ("... 80 GPUs (HPA NS/serve: maxReplicas 10 x 8 GPUs; ...").
#   (2) the HPA's maxReplicas patched to 9: the gauge says 72 and the 55th pod binds (72 GPUs are
#       left, all kept); the time from the patch to the pod running is printed.
#   (3) the HPA deleted: the gauge says 0.
#   Alone: test/e2e/run.sh headroom-hpa
MORE_CASES+=(headroom-hpa)

hh_gauge() {  # hh_gauge QUEUE: tidal_queue_headroom_gpus of QUEUE (-1 if absent)
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" |
    awk -v m="tidal_queue_headroom_gpus{queue=\"$1\"}" 'index($0, m " ") == 1 {v = $2; f = 1} END {print f ? v + 0 : -1}'
}

hh_objects() {  # hh_objects NS MAX: Deployment serve (0 replicas) and its HPA
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: $1}
spec:
  replicas: 0
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve, tidal.dev/queue: inference}}
    spec:
      schedulerName: tidal-scheduler
      containers:
        - name: main
          image: fake.invalid/serve:1
          resources:
            limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "8"}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: serve, namespace: $1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: serve}
  minReplicas: 1
  maxReplicas: $2
YAML
}

case_headroom-hpa() {
  local ns=e2e-headroom-hpa cfg=$BASE/engine-headroom-hpa.yaml t0 ms
  new_ns $ns
  { cat "$E2E_DIR/config/engine.yaml"
    printf 'queues:\n  - {name: default}\n  - {name: inference, headroom: {fromHPA: true, graceCapSeconds: 5}}\n  - {name: batch}\n'; } >"$cfg"
  restart_engine "$cfg" || { fail "engine restart with the fromHPA config failed"; return; }

  # (1) The HPA's 10 x 8 GPUs are kept.
  hh_objects $ns 10 | k apply -f - >/dev/null
  check "tidal_queue_headroom_gpus{queue=\"inference\"} is 80" \
    until_true 15 eval '[ "$(hh_gauge inference)" = 80 ]'
  pods $ns rigid 54 8 tidal-scheduler '{"tidal.dev/queue": "batch", "role": "rigid"}' | k create -f - >/dev/null
  check "54 rigid batch pods run (432 GPUs)" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 54 role=rigid
  pods $ns extra 1 8 tidal-scheduler '{"tidal.dev/queue": "batch", "role": "extra"}' | k create -f - >/dev/null
  check "a 55th rigid pod waits: FailedScheduling names the headroom and the HPA" until_true 20 \
    has_event $ns FailedScheduling "extra-0" "queue inference keeps room to grow to 80 GPUs (HPA $ns/serve: maxReplicas 10 x 8 GPUs"
  check "the 55th pod is not bound" test "$(bound $ns role=extra)" -eq 0

  # (2) maxReplicas lowered: the room shrinks and the waiting pod binds.
  t0=$(e2e_now_ms)
  k patch hpa serve -n $ns --type=merge -p '{"spec": {"maxReplicas": 9}}' >/dev/null
  check "the headroom follows maxReplicas: 72" until_true 15 eval '[ "$(hh_gauge inference)" = 72 ]'
  check "the 55th pod runs once the headroom shrank" until_true 30 all_running $ns 1 role=extra
  ms=$(ms_since "$t0")
  timings+=("headroom-hpa-shrink-to-bound=${ms}ms")
  e2e_log "  maxReplicas 10 -> 9: the waiting pod running after ${ms} ms"

  # (3) The HPA deleted: nothing derived.
  k delete hpa serve -n $ns >/dev/null
  check "the HPA deleted: headroom 0" until_true 15 eval '[ "$(hh_gauge inference)" = 0 ]'
  k delete deployment serve -n $ns --wait=false >/dev/null 2>&1 || true
  cleanup_ns $ns
  restart_engine "$E2E_DIR/config/engine.yaml"
}
