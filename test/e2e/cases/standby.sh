# shellcheck shell=bash
# Sourced by run.sh. Case standby: warm-standby failover (docs/operations.md, "High availability").
#
# Two Tidal replicas (engine + scheduler each, lib/ha.sh) with leader election on one lease, profile
# tidal-ha, on the run's cluster. Checks that the standby's engine is in sync before it leads (same
# node and pod counts as the leader's), then creates a stream of 4-pod x 8-GPU gangs (each pod runs
# 3 s), kill -9's the leader's scheduler and engine mid-load, and measures the time from the kill to
# the new leader's first binding (its log). Once the load ends and everything is bound: every gang
# whole, no pod bound twice (the two schedulers' bind logs), no node ever over-committed (sampled
# every 0.5 s throughout), the standby bound nothing before it took the lease, and the killed
# replica restarts as a synced standby. tidal-slurm (one --once pass on a recorded Slurm state) takes
# its door on the new leader's engine past the dead one's, and the restarted standby's engine refuses
# it. The failover bound asserted is generous (STANDBY_MAX_S, 15);
# the measured figure is printed ("failover: ...") and recorded in docs/benchmarks-resilience.md.
#
# Env: STANDBY_LOAD_S (load duration, 16), STANDBY_KILL_AFTER_S (kill the leader this long into the
# load, 5), STANDBY_GAP_S (between gangs, 0.3), STANDBY_MAX_S (15), plus lib/ha.sh's.
# Time: about 26 s on the 64-node cluster (most of it is the load, the failover and the settle).
# For 1,000 nodes: TIDAL_E2E_FABRIC="4 4 8 8" test/e2e/run.sh standby
source "$E2E_LIB/ha.sh"
MORE_CASES+=(standby)

case_standby() {
  local ns=e2e-standby t0 leader standby t_kill first acq n fo_ms acq_ms load_pid samp_pid i
  local out=$BASE/standby
  mkdir -p "$out"
  new_ns $ns 2>/dev/null || true
  ha_archive_logs "$BASE"
  t0=$(e2e_now_ms)
  if ! ha_start "$BASE" 0 || ! ha_start "$BASE" 1; then
    fail "the two replicas did not start"; standby_cleanup; return
  fi
  check "one replica takes the lease" until_true 30 ha_leader "$BASE"
  leader=$(ha_leader "$BASE") || { fail "no leader"; standby_cleanup; return; }
  standby=$((1 - leader))
  timings+=("standby-pair-up=$(ms_since "$t0")ms")
  e2e_log "  replica $leader leads, replica $standby stands by"
  standby_counts() { curl -sf "$(ha_engine_http "$1")/readyz" | grep -E '^(nodes|pods):' | tr '\n' ' '; }
  check "the standby's engine is synced from its own informers (as the leader's: $(standby_counts "$leader"))" \
    until_true 10 eval "ha_synced '$BASE' $standby && [ \"\$(standby_counts $standby)\" = \"\$(standby_counts $leader)\" ]"

  # Over-commit sampler and the gang stream.
  : >"$out/overcommit"
  ( while :; do ha_overcommitted "$BASE" >>"$out/overcommit" 2>/dev/null; sleep 0.5; done ) &
  samp_pid=$!
  (
    deadline=$(( $(e2e_now_ms) + ${STANDBY_LOAD_S:-16} * 1000 )) g=0
    while [ "$(e2e_now_ms)" -lt "$deadline" ]; do
      ha_gang $ns "g$g" 4 8 3s | k create -f - >/dev/null 2>&1 || echo "g$g" >>"$out/create-failed"
      g=$((g + 1)); sleep "${STANDBY_GAP_S:-0.3}"
    done
    echo "$g" >"$out/gangs"
  ) &
  load_pid=$!
  sleep "${STANDBY_KILL_AFTER_S:-5}"
  n=$(bound $ns)
  check "the leader binds under load before the kill ($n pods bound)" test "$n" -gt 0
  t_kill=$(ha_kill "$BASE" "$leader" all)
  e2e_log "  kill -9 replica $leader (scheduler + engine) at $t_kill, $n pods bound"
  new_first() { ha_binds "$BASE/log/ha-$standby-scheduler.log" | awk -v t="$t_kill" '$1 >= t' | head -n 1 | cut -d' ' -f1; }
  check "replica $standby binds after the kill" until_true $(( ${STANDBY_MAX_S:-15} + 15 )) eval '[ -n "$(new_first)" ]'
  first=$(new_first); acq=$(ha_acquired_ms "$BASE/log/ha-$standby-scheduler.log")
  if [ -n "$first" ] && [ -n "$acq" ]; then
    fo_ms=$((first - t_kill)) acq_ms=$((acq - t_kill))
    e2e_log "  failover: lease taken $(awk -v m="$acq_ms" 'BEGIN { printf "%.2f", m / 1000 }') s and first binding $(awk -v m="$fo_ms" 'BEGIN { printf "%.2f", m / 1000 }') s after the kill ($(k get nodes --no-headers 2>/dev/null | grep -c .) nodes; lease $HA_LEASE_DURATION/$HA_RENEW_DEADLINE/$HA_RETRY_PERIOD)"
    timings+=("standby-failover=${fo_ms}ms")
    check "failover (kill to next binding) under ${STANDBY_MAX_S:-15} s" test "$fo_ms" -lt $(( ${STANDBY_MAX_S:-15} * 1000 ))
  fi
  wait "$load_pid" 2>/dev/null || true
  check "every gang was created" test ! -s "$out/create-failed"
  all_bound() { ha_pod_table "$BASE" $ns >"$out/pods"; [ -s "$out/pods" ] && ! awk '$2 == "-"' "$out/pods" | grep -q .; }
  check "every pod ends bound ($(cat "$out/gangs" 2>/dev/null || echo ?) gangs)" until_true 60 all_bound
  kill "$samp_pid" 2>/dev/null; wait "$samp_pid" 2>/dev/null || true
  ha_gang_counts "$out/pods" >"$out/gang-counts"
  check "no partial gang: every gang has all 4 members bound" eval "! awk '\$2 != \$3' '$out/gang-counts' | grep -q ."
  check "no node was ever over-committed ($(sort -u "$out/overcommit" | head -n 3 | tr '\n' ' '))" test ! -s "$out/overcommit"
  ha_binds "$BASE"/log/ha-*-scheduler.log* >"$out/binds"
  check "no pod bound twice ($(wc -l <"$out/binds") bindings in the two schedulers' logs)" \
    test -z "$(cut -d' ' -f2 "$out/binds" | sort | uniq -d | head -n 3)"
  check "the standby bound nothing before it took the lease" \
    test -z "$(ha_binds "$BASE/log/ha-$standby-scheduler.log" | awk -v t="${acq:-0}" '$1 < t')"
  # tidal-slurm follows the lease (docs/slurm.md, "Two replicas, one adapter"): given both engines,
  # the dead one first, it takes the Slurm door on the new leader's.
  check "tidal-slurm given the dead replica's engine and the new leader's admits on the leader's" \
    standby_slurm_pass "$leader" "$standby"
  check "the new leader's engine holds the Slurm door's node" eval "[ \"\$(standby_slurm_nodes $standby)\" = 1 ]"
  # The killed replica comes back as the standby: synced, binding nothing.
  if ha_start "$BASE" "$leader"; then
    sleep 2
    check "the restarted replica $leader stands by (synced, no bindings, replica $standby still leads)" \
      eval "ha_synced '$BASE' $leader && [ -z \"\$(ha_binds '$BASE/log/ha-$leader-scheduler.log')\" ] && [ \"\$(ha_leader '$BASE')\" = $standby ]"
    # Its scheduler said it stands by: its engine refuses the Slurm door, naming why.
    check "the standby's engine refuses tidal-slurm (stands by)" \
      eval "! standby_slurm_pass $leader && grep -q 'stands by' '$out/slurm.log'"
    check "the standby's engine holds no Slurm node" eval "[ \"\$(standby_slurm_nodes $leader)\" = 0 ]"
    check "tidal-slurm given the standby's engine first still admits on the leader's" standby_slurm_pass "$leader" "$standby"
  else
    fail "the killed replica did not restart"
  fi
  standby_cleanup
}

# standby_slurm_pass I [J...]: one tidal-slurm pass (--once) on a recorded Slurm state (one idle
# node, one held job) against the engines of replicas I, J, ... in that order; log in OUT/slurm.log.
standby_slurm_pass() {
  local engines="" i st=$BASE/standby/slurm-state.json
  for i in "$@"; do engines+="${engines:+,}unix://$BASE/run/ha-$i/engine.sock"; done
  cat >"$st" <<'JSON'
{"format": "tidal-slurm-state/1", "read_unix": 1700000000,
 "nodes": [{"name": "slurm-ha-0", "state": "idle", "gpus": 8, "gpu_model": "a100", "cpus": 32,
            "real_memory_mb": 256000, "partitions": ["batch"]}],
 "jobs": [{"id": "1", "job_id": 1, "user": "alice", "account": "ta", "partition": "batch", "state": "pending",
           "state_reason": "JobHeldUser", "node_count": 1, "gpus_per_node": 8, "time_limit_min": 30,
           "submit_time": 1699999000, "admin_comment": "tidal: waiting for Tidal"}]}
JSON
  timeout 30 "$TIDAL_E2E_BIN/tidal-slurm" --once 1 --state "$st" --metrics off --holder e2e-standby \
    --engine "$engines" >"$BASE/standby/slurm.log" 2>&1
}

# standby_slurm_nodes I: the Slurm door's nodes replica I's engine holds.
standby_slurm_nodes() {
  curl -sf "$(ha_engine_http "$1")/metrics" | awk '/^tidal_door_nodes\{door="slurm"\}/ { print $2 + 0; f = 1 } END { if (!f) print 0 }'
}

standby_cleanup() {
  local i
  for i in 0 1; do e2e_stop "$BASE" "ha-$i-scheduler" 5; e2e_stop "$BASE" "ha-$i-engine" 5; done
  k delete lease -n default "$HA_LEASE" --ignore-not-found >/dev/null 2>&1 || true
  cleanup_ns e2e-standby
}
