# shellcheck shell=bash
# Sourced (after common.sh, pods.sh, ha.sh): the soak and chaos run of hack/soak.sh (`make soak`)
# and of the e2e case soak (cases/soak.sh, short).
#
# soak_run BASE NS DURATION_S OUT: on the cluster in BASE, a warm-standby pair (lib/ha.sh) under a
# steady load for DURATION_S seconds, while a chaos loop kill -9's, at random times (uniform in
# 0.5..1.5 x SOAK_KILL_MEAN_S), one of: the leader's engine, the leader's scheduler, the standby's
# engine, the standby's scheduler (each once first, then at random); and restarts kube-apiserver
# once, half-way
# (SOAK_APISERVER_RESTART=1). A killed process comes back at once (an engine) or after 1 s (a
# scheduler), as the kubelet would restart the container.
#
# Background processes (all ended by soak_run, also on failure):
#   load     a gang every SOAK_GAP_S s: 1, 2, 4 or 8 pods x 8 GPUs, or one pod of 1-8 GPUs; each pod
#            runs 4-15 s (kwok's sim.tidal.dev/runtime), so arrivals and completions are steady
#   reaper   every 5 s: records the Succeeded pods (name node) in OUT/completed, then deletes them
#   sampler  every 1 s: nodes whose live pods ask for more GPUs than they have (OUT/overcommit);
#            every 5 s: each engine's RSS (OUT/rss: "ms replica pid kib")
# OUT/chaos: one line per kill ("kind replica role t_kill t_back t_synced", ms; t_back = the new
# engine's /healthz, or when the new scheduler was started; t_synced = an engine's /readyz says synced: true, or a scheduler logs
# "tidal-engine synced", its snapshot acknowledged), OUT/apiserver (t_down t_up).
#
# soak_report BASE NS OUT: settles (no new load; waits up to SOAK_SETTLE_S, 120, for every pod to
# be bound), then writes OUT/summary (key=value lines, also printed) and returns non-zero when an
# invariant broke: a partial gang, a pod bound twice (two schedulers' bind logs), a node
# over-committed, a lost pod (created, never bound, not pending), an engine whose RSS kept growing
# (soak_rss_growing). Pending pods are listed with the
# reason in their PodScheduled condition. Figures: per engine kill the restart-to-synced time,
# per leader kill the failover (kill to the other replica's first binding), the RSS slope (KiB/min,
# least squares) of every engine process that lived through at least 30 s of samples.
#
# Env: SOAK_KILL_MEAN_S (20), SOAK_GAP_S (0.5), SOAK_SEED (none: $RANDOM), SOAK_APISERVER_RESTART (1),
#      SOAK_SETTLE_S (120), SOAK_COVER (1: the first four kills are the leader's engine, the standby's
#      scheduler, the leader's scheduler, the standby's engine; then random).

soak_now() { e2e_now_ms; }

# soak_load NS DEADLINE_MS OUT
soak_load() {
  local ns=$1 deadline=$2 out=$3 g=0 size gpus rt
  while [ "$(soak_now)" -lt "$deadline" ]; do
    rt="$((4 + RANDOM % 12))s"
    case $((RANDOM % 5)) in
      0) size=1 gpus=$((1 << (RANDOM % 4))) ;;
      1) size=1 gpus=8 ;;
      2) size=2 gpus=8 ;;
      3) size=4 gpus=8 ;;
      *) size=8 gpus=8 ;;
    esac
    if ha_gang "$ns" "s$g" "$size" "$gpus" "$rt" | e2e_kubectl "$BASE" create -f - >/dev/null 2>&1; then
      echo "s$g $size" >>"$out/created"
    else
      # Refused (kube-apiserver is restarting): not created, or only some of its pods (a gang that
      # can never be whole, so the engine never starts it). The report leaves these gangs out of
      # the lost-pod count and counts them.
      echo "s$g" >>"$out/create-errors"
    fi
    g=$((g + 1))
    sleep "${SOAK_GAP_S:-0.5}"
  done
}

# soak_reap NS OUT: one pass
soak_reap() {
  local ns=$1 out=$2 done_pods
  done_pods=$(e2e_kubectl "$BASE" get pods -n "$ns" --field-selector=status.phase=Succeeded \
    -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' 2>/dev/null) || return 0
  [ -n "$done_pods" ] || return 0
  echo "$done_pods" >>"$out/completed"
  # shellcheck disable=SC2046
  e2e_kubectl "$BASE" delete pods -n "$ns" --wait=false $(echo "$done_pods" | cut -d' ' -f1) >/dev/null 2>&1 || true
}

soak_sample() {
  local out=$1 n=0 i pid rest rss
  while :; do
    ha_overcommitted "$BASE" >>"$out/overcommit" 2>/dev/null || true
    if [ $((n % 5)) = 0 ]; then
      for i in 0 1; do
        [ -f "$BASE/run/ha-$i-engine.pid" ] && read -r pid rest <"$BASE/run/ha-$i-engine.pid" || continue
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) && [ -n "$rss" ] &&
          echo "$(soak_now) $i $pid $rss" >>"$out/rss"
      done
    fi
    n=$((n + 1)); sleep 1
  done
}

# soak_wait_synced BASE I: waits (up to TIDAL_E2E_TIMEOUT) and prints the time it saw synced: true.
soak_wait_synced() {
  local deadline=$(( $(soak_now) + TIDAL_E2E_TIMEOUT * 1000 ))
  until ha_synced "$1" "$2"; do
    [ "$(soak_now)" -lt "$deadline" ] || { echo -1; return 1; }
    sleep 0.05
  done
  soak_now
}

# soak_restart_apiserver BASE OUT: SIGTERM kube-apiserver (SIGKILL 3 s later), start it again with the
# same command line, wait for /readyz.
soak_restart_apiserver() {
  local base=$1 out=$2 pid rest t_down t_up args=()
  read -r pid rest <"$base/run/kube-apiserver.pid" || return 1
  mapfile -d '' args <"/proc/$pid/cmdline" || return 1
  t_down=$(soak_now)
  e2e_stop "$base" kube-apiserver 3   # SIGKILL after 3 s: its graceful stop can take 15 s and more here
  ha_rotate_log "$base" kube-apiserver
  e2e_start "$base" kube-apiserver "${args[@]}"
  disown "$!" 2>/dev/null || true
  local deadline=$((SECONDS + 60))
  until e2e_kubectl "$base" get --raw /readyz >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { e2e_log "  kube-apiserver did not come back"; return 1; }
    sleep 0.2
  done
  t_up=$(soak_now)
  echo "$t_down $t_up" >"$out/apiserver"
  e2e_log "  kube-apiserver restarted: down $((t_up - t_down)) ms"
}

# soak_revive BASE OUT: starts again any replica process that is not running although the chaos
# loop did not kill it (a scheduler that lost its lease exits, e.g. when kube-apiserver was away
# for longer than renewDeadline), as the kubelet would; recorded in OUT/revived ("kind replica ms").
soak_revive() {
  local base=$1 out=$2 i
  for i in 0 1; do
    if ! e2e_alive "$base" "ha-$i-engine"; then
      echo "engine $i $(soak_now)" >>"$out/revived"; e2e_log "  replica $i's engine had exited: started again"
      ha_start_engine "$base" "$i" || return 1
    fi
    if ! e2e_alive "$base" "ha-$i-scheduler"; then
      echo "scheduler $i $(soak_now)" >>"$out/revived"; e2e_log "  replica $i's scheduler had exited: started again"
      ha_start_scheduler "$base" "$i" || return 1
    fi
  done
}

# soak_kill_one BASE OUT [KIND ROLE]: one kill (KIND engine|scheduler of the replica in ROLE
# leader|standby; random when not given, or when no replica leads) and the restart, in OUT/chaos.
soak_kill_one() {
  local base=$1 out=$2 want_kind=${3:-} want_role=${4:-} leader victim role kind t_kill t_back t_synced
  leader=$(ha_leader "$base") || leader=""
  if [ -n "$want_role" ] && [ -n "$leader" ]; then
    victim=$leader; [ "$want_role" = leader ] || victim=$((1 - leader))
  else
    victim=$((RANDOM % 2))
  fi
  role=standby; [ "$victim" = "$leader" ] && role=leader
  [ -n "$leader" ] || role=none
  kind=$want_kind
  [ -n "$kind" ] || { if [ $((RANDOM % 2)) = 0 ]; then kind=engine; else kind=scheduler; fi; }
  t_kill=$(ha_kill "$base" "$victim" "$kind")
  if [ "$kind" = engine ]; then
    ha_start_engine "$base" "$victim" || return 1
    t_back=$(soak_now)
  else
    sleep 1
    t_back=$(soak_now)
    ha_start_scheduler "$base" "$victim" || return 1
  fi
  if [ "$kind" = engine ]; then
    t_synced=$(soak_wait_synced "$base" "$victim") || return 1
  else
    # The engine stays synced from the old stream: the new scheduler's own log says when its
    # snapshot (informers listed, sent, acknowledged) went through.
    local deadline=$((SECONDS + TIDAL_E2E_TIMEOUT))
    until t_synced=$(ha_sched_synced_ms "$base/log/ha-$victim-scheduler.log") && [ -n "$t_synced" ]; do
      [ "$SECONDS" -lt "$deadline" ] || return 1
      sleep 0.1
    done
  fi
  echo "$kind $victim $role $t_kill $t_back $t_synced" >>"$out/chaos"
  if [ "$kind" = engine ]; then
    e2e_log "  kill -9 $role engine (replica $victim): /healthz after $((t_back - t_kill)) ms, synced $((t_synced - t_back)) ms later"
  else
    e2e_log "  kill -9 $role scheduler (replica $victim): started again after $((t_back - t_kill)) ms, its snapshot acknowledged $((t_synced - t_back)) ms later"
  fi
}

# soak_run BASE NS DURATION_S OUT
soak_run() {
  local base=$1 ns=$2 dur=$3 out=$4 deadline half next load_pid reap_pid samp_pid restarted=0 rc=0 kills=0 pick
  local cover=("engine leader" "scheduler standby" "scheduler leader" "engine standby")
  mkdir -p "$out"; : >"$out/create-errors"; : >"$out/created"; : >"$out/completed"; : >"$out/overcommit"; : >"$out/rss"; : >"$out/chaos"; : >"$out/revived"
  [ -z "${SOAK_SEED:-}" ] || RANDOM=$SOAK_SEED
  ha_archive_logs "$base"
  ha_start "$base" 0 && ha_start "$base" 1 || return 1
  local deadline_wait=$((SECONDS + 30))
  until ha_leader "$base" >/dev/null; do [ "$SECONDS" -lt "$deadline_wait" ] || return 1; sleep 0.2; done
  echo "$(soak_now)" >"$out/t_start"
  deadline=$(( $(soak_now) + dur * 1000 )) half=$(( $(soak_now) + dur * 500 ))
  soak_load "$ns" "$deadline" "$out" &
  load_pid=$!
  ( while :; do sleep 5; soak_reap "$ns" "$out"; done ) &
  reap_pid=$!
  soak_sample "$out" &
  samp_pid=$!
  SOAK_PIDS="$load_pid $reap_pid $samp_pid"
  local mean=${SOAK_KILL_MEAN_S:-20}
  while :; do
    next=$(( (mean * 500) + RANDOM % (mean * 1000 + 1) ))     # 0.5..1.5 x mean, ms
    [ $(( $(soak_now) + next )) -lt "$deadline" ] || break
    sleep "$(awk -v m="$next" 'BEGIN { printf "%.3f", m / 1000 }')"
    soak_revive "$base" "$out" || { rc=1; break; }
    if [ "${SOAK_APISERVER_RESTART:-1}" = 1 ] && [ "$restarted" = 0 ] && [ "$(soak_now)" -ge "$half" ]; then
      restarted=1
      soak_restart_apiserver "$base" "$out" || { rc=1; break; }
      continue
    fi
    # The first four kills cover each kind once (SOAK_COVER=1), then they are random.
    pick=""; [ "${SOAK_COVER:-1}" = 1 ] && [ "$kills" -lt 4 ] && pick=${cover[$kills]}
    # shellcheck disable=SC2086
    soak_kill_one "$base" "$out" $pick || { e2e_log "  a killed process did not come back"; rc=1; break; }
    kills=$((kills + 1))
  done
  if [ "${SOAK_APISERVER_RESTART:-1}" = 1 ] && [ "$restarted" = 0 ] && [ "$rc" = 0 ]; then
    soak_restart_apiserver "$base" "$out" || rc=1
  fi
  [ "$rc" = 0 ] || kill "$load_pid" 2>/dev/null || true   # stopped early: no more load
  wait "$load_pid" 2>/dev/null || true
  echo "$(soak_now)" >"$out/t_load_end"
  sleep 2; soak_revive "$base" "$out" || rc=1
  return "$rc"
}

# soak_stop_background: ends what soak_run left running (the sampler; the others on failure).
soak_stop_background() {
  local p; for p in ${SOAK_PIDS:-}; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  SOAK_PIDS=""
}

soak_report() {
  local base=$1 ns=$2 out=$3 rc=0 settle=${SOAK_SETTLE_S:-120} deadline g
  # Gangs whose create kube-apiserver refused may have some pods stored: never whole, never
  # started. They are the outage's debris, not the scheduler's: deleted, left out of the checks.
  while read -r g; do
    e2e_kubectl "$base" delete pods -n "$ns" -l "tidal.dev/gang=$g" --wait=false >/dev/null 2>&1 || true
  done <"$out/create-errors"
  deadline=$((SECONDS + settle))
  while :; do
    ha_pod_table "$base" "$ns" >"$out/pods" 2>/dev/null || true
    awk '$2 == "-"' "$out/pods" | grep -q . || break
    [ "$SECONDS" -lt "$deadline" ] || break
    sleep 1
  done
  soak_stop_background
  soak_reap "$ns" "$out"   # the pods that completed since the last pass, for the record
  ha_pod_table "$base" "$ns" >"$out/pods" 2>/dev/null || true
  ha_binds "$base"/log/ha-*-scheduler.log* >"$out/binds"
  # Every pod ever seen: live ones (pods) and the reaped ones (completed, all bound).
  awk 'FILENAME ~ /completed$/ { print $1, $2, "Succeeded"; next } { print $1, $2, $3 }' \
    "$out/completed" "$out/pods" | sort -u -k1,1 >"$out/all-pods"
  local created pods pending lost partial twice over
  created=$(awk '{ n += $2 } END { print n + 0 }' "$out/created")
  pods=$(grep -c . "$out/all-pods" || true)
  pending=$(awk '$2 == "-"' "$out/all-pods" | grep -c . || true)
  # Lost: a created gang member that is neither bound, nor completed, nor pending.
  lost=$(awk 'FILENAME ~ /created$/ { for (i = 0; i < $2; i++) want[$1 "-" i] = 1; next } { have[$1] = 1 }
              END { for (p in want) if (!(p in have)) print p }' "$out/created" "$out/all-pods" | sort | tr '\n' ' ')
  # Partial: a gang with some members bound (or completed) and others not (gangs whose create was
  # refused are judged by the members that exist).
  partial=$(awk '{ g = $1; sub(/-[0-9]+$/, "", g); size[g]++; if ($2 != "-") b[g]++ }
                 END { for (g in size) if (b[g] > 0 && b[g] < size[g]) printf "%s(%d/%d) ", g, b[g], size[g] }' "$out/all-pods")
  twice=$(cut -d' ' -f2 "$out/binds" | sort | uniq -d | head -n 5 | tr '\n' ' ')
  local growing; growing=$(soak_rss_growing "$out")
  over=$(sort -u "$out/overcommit" | head -n 5 | tr '\n' ' ')
  {
    echo "nodes=$(e2e_kubectl "$base" get nodes --no-headers 2>/dev/null | grep -c .)"
    echo "duration_s=$(( ($(cat "$out/t_load_end") - $(cat "$out/t_start")) / 1000 ))"
    echo "gangs_created=$(grep -c . "$out/created" || true) pods_created=$created pods_seen=$pods bindings_logged=$(grep -c . "$out/binds" || true)"
    echo "pending_at_end=$pending"
    echo "lost=${lost:-none}"
    echo "partial_gangs=${partial:-none}"
    echo "bound_twice=${twice:-none}"
    echo "overcommitted=${over:-none}"
    echo "rss_growing=${growing:-none} (engines that lived ${SOAK_RSS_MIN_S:-240} s: second-half growth over ${SOAK_RSS_MAX_KIB_PER_MIN:-512} KiB/min)"
    echo "gangs_refused_by_apiserver=$(grep -c . "$out/create-errors" || true) self_exits_restarted=$(grep -c . "$out/revived" || true)"
    soak_figures "$out"
  } >"$out/summary"
  awk '$2 == "-" { print $1 }' "$out/all-pods" | head -n 5 | while read -r p; do
    echo "pending $p: $(e2e_kubectl "$base" get pod -n "$ns" "$p" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}' 2>/dev/null | cut -c1-200)"
  done >>"$out/summary"
  sed 's/^/  soak: /' "$out/summary" >&2
  [ -z "$lost" ] && [ -z "$partial" ] && [ -z "$twice" ] && [ -z "$over" ] && [ -z "$growing" ] || rc=1
  return "$rc"
}

# soak_rss_growing OUT: engine processes (replica/pid) that sampled for at least SOAK_RSS_MIN_S
# (240) s and whose RSS grew faster than SOAK_RSS_MAX_KIB_PER_MIN (512) over the second half of
# their life (the first minutes fill caches and arenas; a leak keeps growing after). Measured: a
# 393 s engine grew 76 KiB/min over its last 5 minutes. Short runs (the e2e case) have no engine
# that old: nothing is judged there; the engine's own containers are checked by
# test/unit/engine_census_test.cc.
soak_rss_growing() {
  local out=$1
  awk -v min_s="${SOAK_RSS_MIN_S:-240}" -v max="${SOAK_RSS_MAX_KIB_PER_MIN:-512}" '
    { k = $2 "/" $3; n[k]++; t[k, n[k]] = $1; r[k, n[k]] = $4 }
    END { for (k in n) { life = (t[k, n[k]] - t[k, 1]) / 1000; if (life < min_s) continue
            m = int((n[k] + 1) / 2); mins = (t[k, n[k]] - t[k, m]) / 60000
            if (mins > 0 && (r[k, n[k]] - r[k, m]) / mins > max) printf "%s(%+.0fKiB/min) ", k, (r[k, n[k]] - r[k, m]) / mins } }' "$out/rss"
}

# soak_figures OUT: the timing and RSS lines of the summary.
soak_figures() {
  local out=$1
  # Engine kills: restart (healthz) to synced. Scheduler kills: the new scheduler's start to its
  # snapshot acknowledged (Go start-up and the informers' lists included).
  awk '$1 == "engine" { n++; d = $6 - $5; s += d; if (d > m) m = d }
       END { if (n) printf "engine_kills=%d resync_ms_mean=%.0f resync_ms_max=%d\n", n, s / n, m; else print "engine_kills=0" }' "$out/chaos"
  awk '$1 == "scheduler" { n++; d = $6 - $5; s += d; if (d > m) m = d }
       END { if (n) printf "scheduler_kills=%d scheduler_resync_ms_mean=%.0f scheduler_resync_ms_max=%d\n", n, s / n, m; else print "scheduler_kills=0" }' "$out/chaos"
  # After each kill of the leader's engine or scheduler: the first binding (by anyone) after the kill.
  local line kind victim role tk tb ts first list=""
  while read -r kind victim role tk tb ts; do
    [ "$role" = leader ] || continue
    first=$(awk -v t="$tk" '$1 > t { print $1; exit }' <(sort -n "$out/binds"))
    [ -n "$first" ] && list+="$kind:$((first - tk)) "
  done <"$out/chaos"
  echo "leader_kill_to_next_bind_ms=${list:-none}"
  if [ -s "$out/apiserver" ]; then
    read -r tk tb <"$out/apiserver"
    first=$(awk -v t="$tb" '$1 > t { print $1; exit }' <(sort -n "$out/binds"))
    echo "apiserver_down_ms=$((tb - tk)) apiserver_up_to_next_bind_ms=${first:+$((first - tb))}"
  fi
  # RSS per engine process: first, last, least-squares slope over processes with >= 30 s of samples.
  awk '{ k = $2 "/" $3; if (!(k in t0)) { t0[k] = $1; r0[k] = $4 } t1[k] = $1; r1[k] = $4
         n[k]++; t = ($1 - t0[k]) / 60000.0; x[k] += t; y[k] += $4; xx[k] += t * t; xy[k] += t * $4 }
       END { for (k in n) if (n[k] >= 6 && t1[k] - t0[k] >= 30000) {
               d = n[k] * xx[k] - x[k] * x[k]; s = d > 0 ? (n[k] * xy[k] - x[k] * y[k]) / d : 0
               printf "rss replica/pid=%s samples=%d over_s=%d first_kib=%d last_kib=%d slope_kib_per_min=%.0f\n",
                 k, n[k], (t1[k] - t0[k]) / 1000, r0[k], r1[k], s } }' "$out/rss" | sort
}
