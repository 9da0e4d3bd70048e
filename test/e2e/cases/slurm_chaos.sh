# shellcheck shell=bash
# e2e case slurm-chaos (sourced by run.sh; it uses cases/slurm.sh's Slurm setup and helpers, sl_*,
# and shares the running Slurm with the other slurm-* cases, after which it runs):
#
#   slurm-chaos  both doors under steady load on the 16 shared nodes while the two Tidal processes
#       the Slurm side depends on are killed. For TIDAL_E2E_SLURM_CHAOS_S (60) seconds two load
#       loops run, each pausing TIDAL_E2E_SLURM_CHAOS_GAP_S (0.3) s between submissions: one
#       submits sbatch jobs (accounts team-a / team-b: queues ta / tb; sleep 3-8 s, 1-8 GPUs per
#       node, one job in four on 2 nodes), the other one or two pods at a time (queues ta / tb, 1-8
#       GPUs, kwok runtime 3-8 s, restricted to the shared nodes): more work than the 128 shared GPUs
#       hold, so both doors keep a backlog. Meanwhile a chaos loop kill -9's, every 5-12 s,
#       tidal-slurm or tidal-engine (alternately until each died twice, then at random; it runs
#       past the load's end until both were killed twice) and restarts it at once: tidal-slurm with
#       sl_start_adapter (resynced = its /metrics tidal_slurm_up back to 1, i.e. its first complete
#       pass: slurmctld read, full Sync, Admit answered), the engine with tidal-up.sh and the slurm
#       cases' config (the scheduler resyncs it; resynced = /readyz synced, the engine's
#       tidal_door_nodes back to the scheduler's node count for door kubernetes and to 16 for door
#       slurm, and /readyz naming no door awaited). A sampler (sl_sample, about one a second here) runs throughout. Then no more load,
#       and up to TIDAL_E2E_SLURM_CHAOS_SETTLE_S (120) s for everything to end. Asserted: (1) no
#       sample has a shared node with more than 8 GPUs of bound non-terminal pods + slurmctld's
#       GresUsed (an over-booked sample is listed with the last kill before it); (2) every
#       submitted job ended COMPLETED (slurmctld's jobcomp log, else scontrol), none left in
#       slurmctld's queue (held with nothing running), none FAILED / CANCELLED / NODE_FAIL; (3)
#       every created pod was bound and Succeeded; (4) the engine holds nothing afterwards
#       (sl_clean). Also: both doors ran work at once and both had work waiting (the load is more
#       than the room), every submission was accepted. The kill -> restart -> resynced times (ms)
#       are printed and written to $BASE/slurm-chaos.txt (kept with TIDAL_E2E_KEEP=1).
#       TIDAL_E2E_SLURM_CHAOS_SEED fixes the random choices; TIDAL_E2E_SLURM_CHAOS_KILL (default
#       "tidal-slurm tidal-engine") narrows the victims. About 100 s on top of the shared setup.
#       The engine runs with a state file here (sl_restart_engine, TIDAL_E2E_ENGINE_STATE_FILE): it
#       remembers the nodes each door reported, and after a restart nodes a door reported take no
#       new work until that door has resynced (engine/engine_doors.cc). Before that (Dec 2026) every
#       engine kill over-booked shared nodes: the restarted engine planned as soon as the
#       scheduler's snapshot was in, while the Slurm door's running jobs were unknown to it until
#       tidal-slurm's resync 0.3-0.9 s later, and 1-15 pods per kill were bound onto GPUs Slurm jobs
#       held (docs/benchmarks-resilience.md, "Soak and chaos"). Per engine kill the case also prints when
#       /readyz named no door awaited and, from the logs, the pods bound between the scheduler's
#       snapshot and tidal-slurm's resync pass (expected 0; reported, not asserted: log times are
#       approximate) and during that pass.
#       Alone: test/e2e/run.sh slurm-chaos
[ -n "${SL_SOURCED:-}" ] || source "$E2E_DIR/cases/slurm.sh"
sl_register slurm-chaos
FINISH_HOOKS+=(slc_stop_background)
SLC_PIDS=""

slc_stop_background() {
  local p; for p in $SLC_PIDS; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  SLC_PIDS=""
}

# slc_load NS DEADLINE_MS OUT jobs|pods: one of the two load loops (OUT/jobs "id account nodes gpus
# sleep", OUT/pods "name queue gpus runtime", OUT/errors: submissions refused).
slc_load() {
  local ns=$1 deadline=$2 out=$3 kind=$4 n=0 i c g s nn acct q id
  [ -z "${TIDAL_E2E_SLURM_CHAOS_SEED:-}" ] || RANDOM=$((TIDAL_E2E_SLURM_CHAOS_SEED + ${#kind}))
  while [ "$(e2e_now_ms)" -lt "$deadline" ]; do
    g=$((1 + RANDOM % 8)) s=$((3 + RANDOM % 6))
    if [ "$kind" = jobs ]; then
      nn=1; [ $((RANDOM % 4)) = 0 ] && nn=2
      acct=team-a; [ $((RANDOM % 2)) = 0 ] && acct=team-b
      if id=$(sl_sbatch "$acct" chaos "$g" "$s" -N "$nn" 2>>"$out/stderr") && [ -n "$id" ]; then
        echo "$id $acct $nn $g $s" >>"$out/jobs"
      else
        echo "sbatch $acct -N $nn --gpus-per-node=$g sleep $s refused" >>"$out/errors"
      fi
    else
      c=$((1 + RANDOM % 2)) q=ta; [ $((RANDOM % 2)) = 0 ] && q=tb
      if pods "$ns" "p$n" "$c" "$g" tidal-scheduler "{\"tidal.dev/queue\": \"$q\"}" \
          "{\"sim.tidal.dev/runtime\": \"${s}s\"}" "$SL_SEL" | k create -f - >/dev/null 2>>"$out/stderr"; then
        for ((i = 0; i < c; i++)); do echo "p$n-$i $q $g $s" >>"$out/pods"; done
      else
        echo "pods p$n ($c x $g GPUs) refused" >>"$out/errors"
      fi
    fi
    n=$((n + 1))
    sleep "${TIDAL_E2E_SLURM_CHAOS_GAP_S:-0.3}"
  done
}

# slc_sampler NS OUT: OUT/samples "ms violations mixed kube_gpus slurm_gpus worst... pending_jobs unbound_pods"
# (worst: "-", or one "node=pods+slurm" field per over-booked node)
slc_sampler() {
  local ns=$1 out=$2 dir=$2/sample r pj up t
  mkdir -p "$dir"
  while :; do
    t=$(e2e_now_ms)  # the sample's time: its first read
    r=$(sl_sample "$dir")
    pj=$(squeue -h -t PENDING -o %i 2>/dev/null | grep -c . || true)
    up=$(k get pods -n "$ns" --field-selector=spec.nodeName= -o name 2>/dev/null | grep -c . || true)
    echo "$t $r $pj $up" >>"$out/samples"
    sleep 0.3
  done
}

slc_engine_http() { echo "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT"; }
slc_door_nodes() { sl_engine_metric "tidal_door_nodes{door=\"$1\"}"; }

# slc_kill_adapter OUT: kill -9 tidal-slurm, start it again; OUT/chaos "tidal-slurm t_kill t_restart t_up".
slc_kill_adapter() {
  local out=$1 pid rest t_kill t_back t_up
  read -r pid rest <"$BASE/run/tidal-slurm.pid" || return 1
  t_kill=$(e2e_now_ms)
  kill -KILL "$pid" 2>/dev/null || true
  until ! e2e_alive "$BASE" tidal-slurm; do sleep 0.05; done
  rm -f "$BASE/run/tidal-slurm.pid"
  t_back=$(e2e_now_ms)
  sl_start_adapter || return 1
  t_up=$(e2e_now_ms)
  echo "tidal-slurm $t_kill $t_back $t_up" >>"$out/chaos"
  e2e_log "  kill -9 tidal-slurm (pid $pid): restarted after $((t_back - t_kill)) ms, first complete pass (tidal_slurm_up 1) $((t_up - t_back)) ms later"
}

# slc_kill_engine OUT KUBE_NODES: kill -9 tidal-engine, start it again (tidal-up.sh: /healthz, then
# synced); OUT/chaos "tidal-engine t_kill t_restart t_healthz t_synced t_kube t_slurm t_open
# awaited", t_kube / t_slurm: tidal_door_nodes back to KUBE_NODES (door kubernetes) / 16 (door
# slurm); t_open: /readyz names no door awaited (every door resynced: no node held back); awaited:
# the doors its first /readyz answer named (the restart gate the state file set up).
slc_kill_engine() {
  local out=$1 want_k=$2 pid rest t_kill t_back th=0 ts=0 tk=0 tl=0 tg=0 aw0="" r up_pid rc=0 deadline i
  read -r pid rest <"$BASE/run/tidal-engine.pid" || return 1
  t_kill=$(e2e_now_ms)
  kill -KILL "$pid" 2>/dev/null || true
  until ! e2e_alive "$BASE" tidal-engine; do sleep 0.05; done
  rm -f "$BASE/run/tidal-engine.pid"
  for ((i = 0; i < 100; i++)); do e2e_port_free "$TIDAL_E2E_ENGINE_HTTP_PORT" && break; sleep 0.1; done
  t_back=$(e2e_now_ms)
  TIDAL_E2E_ENGINE_CONFIG=$BASE/engine-slurm.yaml TIDAL_E2E_ENGINE_STATE_FILE=$(sl_state_file) \
    "$E2E_LIB/tidal-up.sh" "$BASE" engine >>"$out/engine-up.log" 2>&1 &
  up_pid=$!
  deadline=$((t_back + TIDAL_E2E_TIMEOUT * 1000))
  # Each time is taken when its answer came (a request to a starting engine may wait in its backlog).
  while [ "$(e2e_now_ms)" -lt "$deadline" ]; do
    [ "$th" != 0 ] || ! curl -sf "$(slc_engine_http)/healthz" >/dev/null 2>&1 || th=$(e2e_now_ms)
    r=$(curl -s "$(slc_engine_http)/readyz" 2>/dev/null) || r=""  # 503 until synced: read the body anyway
    [ -n "$aw0" ] || [ -z "$r" ] || aw0=$(sed -n 's/^awaiting doors: //p' <<<"$r")
    [ "$ts" != 0 ] || ! grep -q '^synced: true' <<<"$r" || ts=$(e2e_now_ms)
    [ "$tg" != 0 ] || ! grep -q '^awaiting doors: none' <<<"$r" || tg=$(e2e_now_ms)
    [ "$tk" != 0 ] || [ "$(slc_door_nodes kubernetes)" != "$want_k" ] || tk=$(e2e_now_ms)
    [ "$tl" != 0 ] || [ "$(slc_door_nodes slurm)" != "${#SL_NODES[@]}" ] || tl=$(e2e_now_ms)
    [ "$th" = 0 ] || [ "$ts" = 0 ] || [ "$tk" = 0 ] || [ "$tl" = 0 ] || [ "$tg" = 0 ] || break
    sleep 0.05
  done
  wait "$up_pid" || rc=$?
  echo "tidal-engine $t_kill $t_back $th $ts $tk $tl $tg ${aw0:-unknown}" >>"$out/chaos"
  e2e_log "  kill -9 tidal-engine (pid $pid): restarted after $((t_back - t_kill)) ms; then /healthz $((th ? th - t_back : -1)) ms," \
    "synced $((ts ? ts - t_back : -1)) ms, door kubernetes $want_k nodes $((tk ? tk - t_back : -1)) ms, door slurm 16 nodes $((tl ? tl - t_back : -1)) ms," \
    "no door awaited $((tg ? tg - t_back : -1)) ms (awaited at its first /readyz answer: ${aw0:-unknown})"
  [ "$rc" = 0 ] && [ "$th" != 0 ] && [ "$ts" != 0 ] && [ "$tk" != 0 ] && [ "$tl" != 0 ] && [ "$tg" != 0 ]
}

# slc_report OUT: the per-kill times and their summary (printed, and in $BASE/slurm-chaos.txt).
slc_report() {
  awk '$1 == "tidal-slurm" { printf "kill tidal-slurm at +%d ms: restarted %d ms after the kill, resynced (tidal_slurm_up 1) %d ms after the restart\n", $2 - t0, $3 - $2, $4 - $3 }
       $1 == "tidal-engine" { printf "kill tidal-engine at +%d ms: restarted %d ms after the kill; after the restart /healthz %d ms, synced %d ms, door kubernetes %d ms, door slurm %d ms, no door awaited %d ms (awaited at its first /readyz answer: %s)\n", $2 - t0, $3 - $2, $4 - $3, $5 - $3, $6 - $3, $7 - $3, $8 - $3, $9 }' \
    t0="$(cat "$1/t_start")" "$1/chaos"
  awk '$1 == "tidal-slurm" { n++; d = $4 - $3; s += d; if (d > m) m = d; if (!lo || d < lo) lo = d }
       END { if (n) printf "tidal-slurm kills=%d restart_to_resynced_ms min=%d mean=%.0f max=%d\n", n, lo, s / n, m }' "$1/chaos"
  awk '$1 == "tidal-engine" { n++; k = $6 - $3; l = $7 - $3; d = k > l ? k : l; s += d; if (d > m) m = d; if (!lo || d < lo) lo = d
                               sk += k; sl += l; if (l > ml) ml = l; if (k > mk) mk = k }
       END { if (n) printf "tidal-engine kills=%d restart_to_both_doors_resynced_ms min=%d mean=%.0f max=%d (door kubernetes mean %.0f max %d; door slurm mean %.0f max %d)\n", n, lo, s / n, m, sk / n, mk, sl / n, ml }' "$1/chaos"
}

# slc_windows OUT NS: per engine kill, from the logs: when the scheduler's snapshot was acknowledged
# ("tidal-engine synced"), tidal-slurm's first pass after it ("reconciling again", logged at the
# pass's end with its duration: its snapshot went in during that pass), and the pods of NS bound
# from the scheduler's snapshot to the pass's start (placed while the engine knew no Slurm job: the
# engine must place none there) and during the pass. Times of day, local.
slc_windows() {
  local out=$1 ns=$2 k
  for k in $(awk '$1 == "tidal-engine" { print $2 }' "$out/chaos"); do
    date -d "@$((k / 1000)).$(printf %03d $((k % 1000)))" +'K %H:%M:%S.%N'
  done >"$out/windows.in"
  { cat "$out/windows.in"
    grep -h '"tidal-engine synced"' "$BASE/log/tidal-scheduler.log" | awk '{ print "S", $2 }'
    grep -h -A1 'reconciling again' "$BASE"/log/tidal-slurm*.log |
      awk '/reconciling again/ { t = substr($2, 1, length($2) - 1); next }
           t != "" && / pass: / { d = $NF; sub(/s$/, "", d); print "L", t, d; t = "" }'
    grep -h "Successfully bound pod to node\" pod=\"$ns/" "$BASE/log/tidal-scheduler.log" | awk '{ print "B", $2 }'
  } | awk '{ split($2, t, ":"); x = t[1] * 3600 + t[2] * 60 + t[3]; printf "%s %.6f %s\n", $1, x, $2
             if ($1 == "L") printf "P %.6f %s\n", x - $3, $2 }' | sort -k2,2n |
    awk '$1 == "K" { n++; k[n] = $2; kt[n] = $3; s[n] = 0; p[n] = 0; l[n] = 0; next }
         n && $1 == "S" && !s[n] { s[n] = $2; st[n] = $3; next }
         n && $1 == "P" && !p[n] { p[n] = $2; next }
         n && $1 == "L" && !l[n] { l[n] = $2; lt[n] = $3; next }
         n && $1 == "B" && s[n] && !p[n] { b[n]++ }
         n && $1 == "B" && s[n] && p[n] && !l[n] { d[n]++ }
         END { for (i = 1; i <= n; i++) printf "engine kill at %s: door kubernetes resynced %s (scheduler log), door slurm in the pass ending %s (%d ms; tidal-slurm log): %d-%d ms with only the kubernetes door, %d pods bound before that pass, %d during it\n",
                 substr(kt[i], 1, 12), substr(st[i], 1, 12), substr(lt[i], 1, 12), (l[i] - p[i]) * 1000 + 0.5,
                 (p[i] > s[i] ? (p[i] - s[i]) * 1000 + 0.5 : 0), (l[i] - s[i]) * 1000 + 0.5, b[i] + 0, d[i] + 0 }'
}

case_slurm-chaos() {
  local ns=e2e-slurm-chaos out=$BASE/slurm-chaos dur=${TIDAL_E2E_SLURM_CHAOS_S:-60} settle=${TIDAL_E2E_SLURM_CHAOS_SETTLE_S:-120}
  local t0 deadline load_pid samp_pid want_k ks=0 ke=0 next kind rc=0 jobs pods left_jobs left_pods
  local samples viol busy waiting max_total worst st_line jobs_done not_done queued pods_done unbound missing
  new_ns $ns
  sl_up || { fail "slurm + tidal-slurm did not come up"; return; }
  rm -rf "$out"; mkdir -p "$out"
  : >"$out/jobs"; : >"$out/pods"; : >"$out/errors"; : >"$out/stderr"; : >"$out/chaos"; : >"$out/samples"
  want_k=$(slc_door_nodes kubernetes)
  [ -z "${TIDAL_E2E_SLURM_CHAOS_SEED:-}" ] || RANDOM=$((TIDAL_E2E_SLURM_CHAOS_SEED + 1))
  t0=$(e2e_now_ms); echo "$t0" >"$out/t_start"
  deadline=$((t0 + dur * 1000))
  slc_load $ns "$deadline" "$out" jobs &
  load_pid=$!
  slc_load $ns "$deadline" "$out" pods &
  load_pid+=" $!"
  slc_sampler $ns "$out" &
  samp_pid=$!
  SLC_PIDS="$load_pid $samp_pid"
  e2e_log "  load for ${dur}s (door kubernetes reports $want_k nodes), kills every 5-12 s"
  # Alternate (tidal-slurm first) until each was killed twice, then at random; stop when the next
  # kill would fall after the load's end and both were killed twice (or 90 s after the end).
  # TIDAL_E2E_SLURM_CHAOS_KILL narrows the victims (e.g. tidal-slurm alone); the other is not killed.
  local kill_s=1 kill_e=1
  case " ${TIDAL_E2E_SLURM_CHAOS_KILL:-tidal-slurm tidal-engine} " in *" tidal-slurm "*) ;; *) kill_s=0 ks=2 ;; esac
  case " ${TIDAL_E2E_SLURM_CHAOS_KILL:-tidal-slurm tidal-engine} " in *" tidal-engine "*) ;; *) kill_e=0 ke=2 ;; esac
  while [ $((kill_s + kill_e)) -gt 0 ]; do
    next=$((5000 + RANDOM % 7001))
    if [ $(($(e2e_now_ms) + next)) -ge "$deadline" ] && [ "$ks" -ge 2 ] && [ "$ke" -ge 2 ]; then break; fi
    [ "$(e2e_now_ms)" -lt $((deadline + 90000)) ] || break
    sleep "$(awk -v m="$next" 'BEGIN { printf "%.3f", m / 1000 }')"
    if [ "$kill_e" = 0 ]; then kind=slurm
    elif [ "$kill_s" = 0 ]; then kind=engine
    elif [ "$ks" -lt 2 ] || [ "$ke" -lt 2 ]; then
      kind=slurm; [ "$ke" -lt "$ks" ] && kind=engine
    else
      kind=slurm; [ $((RANDOM % 2)) = 0 ] && kind=engine
    fi
    if [ "$kind" = slurm ]; then
      slc_kill_adapter "$out" || { rc=1; e2e_log "  tidal-slurm did not come back"; break; }
      ks=$((ks + 1))
    else
      slc_kill_engine "$out" "$want_k" || { rc=1; e2e_log "  tidal-engine did not come back and resync"; break; }
      ke=$((ke + 1))
    fi
  done
  ks=$(grep -c '^tidal-slurm ' "$out/chaos" || true) ke=$(grep -c '^tidal-engine ' "$out/chaos" || true)
  check "the chaos ran: tidal-slurm killed $ks times, tidal-engine $ke times (each >= 2), every one back and resynced" \
    test "$rc" = 0 -a "$ks" -ge $((2 * kill_s)) -a "$ke" -ge $((2 * kill_e))
  # shellcheck disable=SC2086
  wait $load_pid 2>/dev/null || true
  SLC_PIDS=$samp_pid
  jobs=$(grep -c . "$out/jobs" || true) pods=$(grep -c . "$out/pods" || true)
  e2e_log "  load over after $(ms_since "$t0") ms: $jobs sbatch jobs, $pods pods submitted; settling (up to ${settle}s)"
  # Settle: every job gone from slurmctld's queue, every pod Succeeded.
  local t_settle; t_settle=$(e2e_now_ms)
  local sdeadline=$((SECONDS + settle))
  while :; do
    left_jobs=$(squeue -h -o %i 2>/dev/null | grep -c . || true)
    left_pods=$(k get pods -n $ns -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -cv '^Succeeded$' || true)
    [ "$left_jobs" -eq 0 ] && [ "$left_pods" -eq 0 ] && break
    [ "$SECONDS" -lt "$sdeadline" ] || break
    sleep 1
  done
  e2e_log "  settled in $(ms_since "$t_settle") ms ($left_jobs jobs in slurmctld's queue, $left_pods pods not Succeeded)"
  slc_stop_background
  timings+=("slurm-chaos=$(ms_since "$t0")ms")

  # (1) no double booking in any sample
  samples=$(grep -c . "$out/samples" || true)
  viol=$(awk '$2 > 0' "$out/samples" | grep -c . || true)
  busy=$(awk '$4 > 0 && $5 > 0' "$out/samples" | grep -c . || true)
  waiting=$(awk '$(NF - 1) > 0 && $NF > 0' "$out/samples" | grep -c . || true)
  max_total=$(awk '{ t = $4 + $5; if (t > m) m = t } END { print m + 0 }' "$out/samples")
  # Each over-booked sample with the last kill before it (and, for an engine, when door slurm was back).
  worst=$(awk 'FILENAME ~ /chaos$/ { k[++n] = $2; w[n] = $1; back[n] = ($1 == "tidal-engine" ? $7 : $4); next }
               $2 > 0 { printf "+%dms:", $1 - t0; for (i = 6; i <= NF - 2; i++) printf " %s", $i
                        for (j = n; j > 0 && k[j] > $1; j--) ; if (j > 0) printf " (%d ms after kill -9 %s, resynced %d ms after it)", $1 - k[j], w[j], back[j] - k[j]
                        printf "; " }' t0="$t0" "$out/chaos" "$out/samples" | cut -c1-800)
  e2e_log "  $samples samples: $busy with both doors running work, $waiting with both a job and a pod waiting," \
    "at most $max_total of 128 shared GPUs in use; $viol over-booked${worst:+ ($worst)}"
  check "no shared node ever held more than 8 GPUs of pods + Slurm jobs ($samples samples, $busy with both doors busy)" test "$viol" -eq 0
  check "both doors ran work on the shared nodes at once (>= 10 samples) and work waited at both (>= 5 samples)" \
    test "$busy" -ge 10 -a "$waiting" -ge 5
  check "every submission was accepted ($(grep -c . "$out/errors" || true) refused)" test ! -s "$out/errors"

  # (2) no lost job: every job COMPLETED (the jobcomp log; scontrol for any it does not have)
  local jc; jc=$(sl_base)/log/jobcomp.txt
  while read -r id _; do
    st_line=$(grep "^JobId=$id " "$jc" 2>/dev/null | grep -o ' JobState=[A-Z_]*' | tail -n 1)
    st_line=${st_line#*=}
    [ -n "$st_line" ] || st_line="$(sl_field "$id" JobState)(scontrol)"
    echo "$id ${st_line:-unknown}"
  done <"$out/jobs" >"$out/job-states"
  jobs_done=$(awk '$2 == "COMPLETED"' "$out/job-states" | grep -c . || true)
  not_done=$(awk '$2 != "COMPLETED" { printf "%s=%s ", $1, $2 }' "$out/job-states" | cut -c1-400)
  queued=$(squeue -h -o '%i %T prio=%Q %r' 2>/dev/null | head -n 5 | tr '\n' ';')
  [ -z "$queued" ] || e2e_log "  still in slurmctld's queue: $queued $(sl_field "$(squeue -h -o %i | head -n 1)" AdminComment)"
  check "every one of the $jobs sbatch jobs ended COMPLETED ($jobs_done; others: ${not_done:-none})" test "$jobs_done" -eq "$jobs" -a "$jobs" -gt 0
  check "no job left in slurmctld's queue (held or pending: ${queued:-none})" test -z "$queued"

  # (3) no lost pod: every created pod bound and Succeeded
  k get pods -n $ns -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\n"}{end}' >"$out/pod-states"
  pods_done=$(awk 'FNR == NR { want[$1] = 1; next } ($1 in want) && $2 != "" && $3 == "Succeeded"' "$out/pods" "$out/pod-states" | grep -c . || true)
  unbound=$(awk 'NF < 3 || $2 == "" { printf "%s ", $1 }' "$out/pod-states" | cut -c1-300)
  missing=$(awk 'FNR == NR { have[$1] = 1; next } !($1 in have) { printf "%s ", $1 }' "$out/pod-states" "$out/pods" | cut -c1-300)
  check "every one of the $pods pods was bound and Succeeded ($pods_done; unbound: ${unbound:-none}; missing: ${missing:-none})" \
    test "$pods_done" -eq "$pods" -a "$pods" -gt 0

  { echo "slurm-chaos $(date -u +%FT%TZ): ${dur}s of load, $jobs sbatch jobs ($jobs_done COMPLETED), $pods pods ($pods_done Succeeded)," \
      "$samples samples ($viol over-booked, $busy with both doors busy, $waiting with both waiting), max $max_total of 128 GPUs," \
      "settled $(ms_since "$t_settle") ms after the load"
    slc_report "$out"; slc_windows "$out" $ns; } >"$BASE/slurm-chaos.txt"
  sed 's/^/  slurm-chaos: /' "$BASE/slurm-chaos.txt" >&2
  # (4) the engine holds nothing afterwards (sl_clean's check)
  sl_clean $ns
}
