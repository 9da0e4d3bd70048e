# shellcheck shell=bash
# Sourced (after common.sh): a warm-standby pair of Tidal replicas on the e2e cluster, for
# cases/standby.sh and hack/soak.sh. Replica I (0, 1, ...) is a tidal-engine (socket
# BASE/run/ha-I/engine.sock, HTTP 127.0.0.1:$((TIDAL_E2E_HA_ENGINE_PORT0 + I))) and a
# tidal-scheduler (secure port $((TIDAL_E2E_HA_SCHED_PORT0 + I)), config/scheduler-config-ha.yaml:
# leader election on lease default/$HA_LEASE, one profile $HA_PROFILE). Processes are registered
# as BASE/run/ha-I-engine.pid and ha-I-scheduler.pid, so cluster-down.sh stops them too; logs are
# BASE/log/ha-I-{engine,scheduler}.log, the previous start's kept as .log.N (kill tests read them).
#
# Env: TIDAL_E2E_HA_ENGINE_PORT0 (20091), TIDAL_E2E_HA_SCHED_PORT0 (20271), HA_PROFILE (tidal-ha),
#      HA_LEASE (tidal-ha), HA_LEASE_DURATION / HA_RENEW_DEADLINE / HA_RETRY_PERIOD (3s / 2s / 500ms,
#      as deploy/base), TIDAL_E2E_ENGINE_CONFIG (config/engine.yaml).

: "${TIDAL_E2E_HA_ENGINE_PORT0:=20091}" "${TIDAL_E2E_HA_SCHED_PORT0:=20271}"
: "${HA_PROFILE:=tidal-ha}" "${HA_LEASE:=tidal-ha}"
: "${HA_LEASE_DURATION:=3s}" "${HA_RENEW_DEADLINE:=2s}" "${HA_RETRY_PERIOD:=500ms}"

ha_engine_http() { echo "http://127.0.0.1:$((TIDAL_E2E_HA_ENGINE_PORT0 + $1))"; }

# ha_rotate_log BASE NAME: keep the previous log as NAME.log.N (N = 1, 2, ...).
ha_rotate_log() {
  local f=$1/log/$2.log n=1
  [ -f "$f" ] || return 0
  while [ -e "$f.$n" ]; do n=$((n + 1)); done
  mv -f "$f" "$f.$n"
}

# ha_archive_logs BASE: moves the ha-* logs of an earlier pair aside (BASE/log/ha-old/N/), so the
# bind logs a run reads are its own.
ha_archive_logs() {
  local n=1
  compgen -G "$1/log/ha-*.log*" >/dev/null || return 0
  while [ -e "$1/log/ha-old/$n" ]; do n=$((n + 1)); done
  mkdir -p "$1/log/ha-old/$n" && mv -f "$1"/log/ha-*.log* "$1/log/ha-old/$n/"
}

# ha_wait_port_free PORT: up to 10 s. A process just killed with -9 may still hold its listening
# socket for a moment: its main thread shows as a zombie (what e2e_alive looks at) before the
# other threads have exited and the files are closed.
ha_wait_port_free() {
  local i
  for ((i = 0; i < 100; i++)); do e2e_port_free "$1" && return 0; sleep 0.1; done
  return 1
}

# ha_start_engine BASE I: start replica I's engine and wait for /healthz.
ha_start_engine() {
  local base=$1 i=$2 port=$((TIDAL_E2E_HA_ENGINE_PORT0 + $2))
  mkdir -p "$base/run/ha-$i"
  ha_wait_port_free "$port" || { e2e_log "port $port in use (TIDAL_E2E_HA_ENGINE_PORT0)"; return 1; }
  # The engine plans only for its schedulerName: the pair's profile.
  sed "s/^schedulerName: .*/schedulerName: $HA_PROFILE/" "${TIDAL_E2E_ENGINE_CONFIG:-$E2E_ROOT/test/e2e/config/engine.yaml}" \
    >"$base/run/ha-$i/engine.yaml"
  grep -q "^schedulerName: $HA_PROFILE\$" "$base/run/ha-$i/engine.yaml" || { e2e_log "engine config names no schedulerName"; return 1; }
  rm -f "$base/run/ha-$i/engine.sock"
  ha_rotate_log "$base" "ha-$i-engine"
  e2e_start "$base" "ha-$i-engine" "$TIDAL_E2E_BIN/tidal-engine" --listen="unix://$base/run/ha-$i/engine.sock" \
    --http-addr="127.0.0.1:$port" --config="$base/run/ha-$i/engine.yaml"
  disown "$!" 2>/dev/null || true  # a kill -9 later is the test's doing: no "Killed" job notice
  e2e_wait "$base" "ha-$i-engine" "replica $i's tidal-engine /healthz" curl -sf "$(ha_engine_http "$i")/healthz"
}

# ha_start_scheduler BASE I: start replica I's scheduler and wait for /healthz (a standby is healthy).
ha_start_scheduler() {
  local base=$1 i=$2 port=$((TIDAL_E2E_HA_SCHED_PORT0 + $2))
  ha_wait_port_free "$port" || { e2e_log "port $port in use (TIDAL_E2E_HA_SCHED_PORT0)"; return 1; }
  sed -e "s|@KUBECONFIG@|$base/kubeconfig|" -e "s|@ENGINE@|unix://$base/run/ha-$i/engine.sock|" \
    -e "s|@LEASE@|$HA_LEASE|" -e "s|@PROFILE@|$HA_PROFILE|" -e "s|@LEASE_DURATION@|$HA_LEASE_DURATION|" \
    -e "s|@RENEW_DEADLINE@|$HA_RENEW_DEADLINE|" -e "s|@RETRY_PERIOD@|$HA_RETRY_PERIOD|" \
    "$E2E_ROOT/test/e2e/config/scheduler-config-ha.yaml" >"$base/run/ha-$i/scheduler-config.yaml"
  ha_rotate_log "$base" "ha-$i-scheduler"
  e2e_start "$base" "ha-$i-scheduler" "$TIDAL_E2E_BIN/tidal-scheduler" --config="$base/run/ha-$i/scheduler-config.yaml" \
    --authentication-kubeconfig="$base/kubeconfig" --authorization-kubeconfig="$base/kubeconfig" \
    --authentication-skip-lookup --bind-address=127.0.0.1 --secure-port="$port" --v=2
  disown "$!" 2>/dev/null || true
  e2e_wait "$base" "ha-$i-scheduler" "replica $i's tidal-scheduler /healthz" curl -skf "https://127.0.0.1:$port/healthz"
}

# ha_synced BASE I: replica I's engine says its scheduler's snapshot is in (synced: true).
ha_synced() { curl -sf "$(ha_engine_http "$2")/readyz" | grep -q '^synced: true'; }

# ha_start BASE I: engine + scheduler of replica I, until the engine is synced from its scheduler's
# informers (a standby's too: that is the point).
ha_start() {
  ha_start_engine "$1" "$2" && ha_start_scheduler "$1" "$2" &&
    e2e_wait "$1" "ha-$2-engine" "replica $2's engine synced by its scheduler" ha_synced "$1" "$2"
}

# ha_kill BASE I [engine|scheduler|all]: kill -9 (default both). Prints the time of the kill (ms).
ha_kill() {
  local base=$1 i=$2 what=${3:-all} n pid rest t
  t=$(e2e_now_ms)
  for n in scheduler engine; do
    [ "$what" = all ] || [ "$what" = "$n" ] || continue
    if e2e_alive "$base" "ha-$i-$n"; then
      read -r pid rest <"$base/run/ha-$i-$n.pid"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for n in scheduler engine; do
    [ "$what" = all ] || [ "$what" = "$n" ] || continue
    until ! e2e_alive "$base" "ha-$i-$n"; do sleep 0.05; done
    rm -f "$base/run/ha-$i-$n.pid"
  done
  echo "$t"
}

# ha_identity BASE I: the lease identity replica I's scheduler logged at start (command.go).
ha_identity() {
  sed -n 's/.*Tidal: leader election on.*identity="\([^"]*\)".*/\1/p' "$1/log/ha-$2-scheduler.log" 2>/dev/null | tail -n 1
}

# ha_leader BASE: the index of the replica holding the lease (nothing when none of the running ones).
ha_leader() {
  local holder i
  holder=$(e2e_kubectl "$1" get lease -n default "$HA_LEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) || return 1
  [ -n "$holder" ] || return 1
  for i in 0 1; do
    if e2e_alive "$1" "ha-$i-scheduler" && [ "$(ha_identity "$1" "$i")" = "$holder" ]; then echo "$i"; return 0; fi
  done
  return 1
}

# ha_klog_ms: klog lines on stdin ("I1201 18:30:00.123456 ...") -> "EPOCH_MS rest-of-line" (today's
# date, local time; a run across midnight would be off by a day).
ha_klog_ms() {
  local midnight; midnight=$(date -d 'today 00:00:00' +%s)
  awk -v m="$midnight" '{ split($2, t, ":"); printf "%.0f %s\n", (m + t[1] * 3600 + t[2] * 60 + t[3]) * 1000, $0 }'
}

# ha_binds LOG...: "EPOCH_MS ns/pod node" for every "Successfully bound pod to node" in the logs.
ha_binds() {
  cat "$@" 2>/dev/null | grep -a '"Successfully bound pod to node"' | ha_klog_ms |
    sed -n 's/^\([0-9]*\) .* pod="\([^"]*\)" node="\([^"]*\)".*/\1 \2 \3/p'
}

# ha_sched_synced_ms LOG: when the scheduler's Sync stream first had its snapshot acknowledged
# ("tidal-engine synced"; nothing yet when it has not).
ha_sched_synced_ms() { grep -a '"tidal-engine synced"' "$1" 2>/dev/null | head -n 1 | ha_klog_ms | cut -d' ' -f1; }

# ha_acquired_ms LOG: when the scheduler took the lease (nothing if it never did).
ha_acquired_ms() { grep -a 'Successfully acquired lease' "$1" 2>/dev/null | head -n 1 | ha_klog_ms | cut -d' ' -f1; }

# ha_gang NS NAME SIZE GPUS [RUNTIME]: a gang of SIZE pods for $HA_PROFILE (label tidal.dev/gang=NAME),
# each running RUNTIME (a Go duration, kwok's sim.tidal.dev/runtime; empty: until deleted).
ha_gang() {
  local ann="{\"tidal.dev/gang-size\": \"$3\"${5:+, \"sim.tidal.dev/runtime\": \"$5\"}}"
  e2e_pods "$1" "$2" "$3" "$4" "$HA_PROFILE" "{\"tidal.dev/gang\": \"$2\"}" "$ann"
}

# ha_pod_table BASE NS: "pod node phase gpus gang" per pod of NS ("-" for none).
ha_pod_table() {
  e2e_kubectl "$1" get pods -n "$2" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}- {.status.phase} {.spec.containers[0].resources.requests.nvidia\.com/gpu}- {.metadata.labels.tidal\.dev/gang}-{"\n"}{end}' |
    awk '{ n = $2; sub(/-$/, "", n); if (n == "") n = "-"; g = $4; sub(/-$/, "", g); if (g == "") g = 0
           k = $5; sub(/-$/, "", k); if (k == "") k = "-"; print $1, n, $3, g, k }'
}

# ha_overcommitted BASE: "node gpus" for every node whose bound, non-terminal pods (all namespaces)
# ask for more than TIDAL_E2E_NODE_GPUS (8) GPUs; nothing when none is.
ha_overcommitted() {
  e2e_kubectl "$1" get pods -A -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.phase} {.spec.containers[0].resources.requests.nvidia\.com/gpu}{"\n"}{end}' |
    awk -v cap="${TIDAL_E2E_NODE_GPUS:-8}" 'NF == 3 && $2 != "Succeeded" && $2 != "Failed" { g[$1] += $3 }
      END { for (n in g) if (g[n] > cap) print n, g[n] }'
}

# ha_gang_counts TABLE-FILE: "gang bound size" per gang of an ha_pod_table output.
ha_gang_counts() {
  awk '$5 != "-" { size[$5]++; if ($2 != "-") bound[$5]++ } END { for (g in size) print g, bound[g] + 0, size[g] }' "$1"
}
