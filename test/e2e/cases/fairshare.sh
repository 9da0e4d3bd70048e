# shellcheck shell=bash
# Sourced by run.sh: weighted fair share on the Kubernetes path (issue 11).
#   fair-share  queues qa (weight 1) and qb (weight 3), no quotas (the engine restarted with them):
#               64 qa pods (8 GPUs, 15 s) fill the cluster; then 64 more qa pods (created first, so
#               kube-scheduler's PrioritySort tries them first) and 64 qb pods (both 10 min) queue.
#               When the first wave ends, the freed 64 nodes go about 16 / 48: qb's share of them
#               within 10% of 3/4
MORE_CASES+=(fair-share)

case_fair-share() {
  local ns=e2e-fairshare cfg=$BASE/engine-fairshare.yaml qa qb t0
  new_ns $ns
  { cat "$E2E_DIR/config/engine.yaml"
    printf 'queues:\n  - {name: qa, weight: 1}\n  - {name: qb, weight: 3}\n'; } >"$cfg"
  restart_engine "$cfg"
  pods $ns wave1 64 8 tidal-scheduler '{"tidal.dev/queue": "qa", "wave": "1"}' '{"sim.tidal.dev/runtime": "15s"}' | k create -f - >/dev/null
  check "qa's first wave fills the cluster" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 64 wave=1
  pods $ns qa 64 8 tidal-scheduler '{"tidal.dev/queue": "qa", "wave": "2"}' '{"sim.tidal.dev/runtime": "10m"}' | k create -f - >/dev/null
  sleep 1
  pods $ns qb 64 8 tidal-scheduler '{"tidal.dev/queue": "qb", "wave": "2"}' '{"sim.tidal.dev/runtime": "10m"}' | k create -f - >/dev/null
  t0=$(e2e_now_ms)
  check "the second wave takes all 64 freed nodes" until_true 90 all_running $ns 64 wave=2
  timings+=("fair-share-second-wave=$(ms_since "$t0")ms")
  qa=$(running $ns 'wave=2,tidal.dev/queue=qa') qb=$(running $ns 'wave=2,tidal.dev/queue=qb')
  check "freed nodes split qa $qa / qb $qb: qb within 10% of 3/4 (43..53 of 64)" test "$qb" -ge 43 -a "$qb" -le 53
  cleanup_ns $ns
  restart_engine "$E2E_DIR/config/engine.yaml"
}
