# shellcheck shell=bash
# Shared settings and helpers for the e2e scripts. Source it; do not run it.
#
# Every port, path and knob below can be overridden from the environment. Defaults are below the
# Linux ephemeral range (32768-60999) and away from the components' stock ports (2379/2380, 6443,
# 10247, 10259), so a developer's own cluster and outgoing connections cannot collide with them.

E2E_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_ROOT=$(cd "$E2E_LIB/../../.." && pwd)                    # repository root

: "${TIDAL_E2E_TOOLS_BIN:=$E2E_ROOT/build/tools/bin}"        # etcd kube-apiserver kubectl kwok
: "${TIDAL_E2E_BIN:=$E2E_ROOT/build/bin}"                    # tidal-scheduler
: "${TIDAL_E2E_ETCD_PORT:=22379}"                            # etcd client (http)
: "${TIDAL_E2E_ETCD_PEER_PORT:=22380}"                       # etcd peer (http, single member)
: "${TIDAL_E2E_APISERVER_PORT:=26443}"                       # kube-apiserver (https)
: "${TIDAL_E2E_KWOK_PORT:=20247}"                            # kwok's kubelet-like server (http, /healthz)
: "${TIDAL_E2E_SCHED_PORT:=20259}"                           # tidal-scheduler secure port (https, /healthz)
: "${TIDAL_E2E_ENGINE_HTTP_PORT:=20081}"                     # tidal-engine HTTP (/healthz, /readyz, /queues)
: "${TIDAL_E2E_KCM_PORT:=20257}"                             # kube-controller-manager secure port (demo only)
: "${TIDAL_E2E_TOKEN:=tidal-e2e-admin-token}"                # static bearer token (system:masters)
: "${TIDAL_E2E_TIMEOUT:=60}"                                 # seconds to wait for each component
: "${TIDAL_E2E_KWOK_LEASE_SECONDS:=0}"                       # kwok node leases (0 = off: no controller-manager here)
: "${TIDAL_E2E_APISERVER_V:=1}"                              # kube-apiserver --v
export TIDAL_E2E_TOOLS_BIN TIDAL_E2E_BIN TIDAL_E2E_ETCD_PORT TIDAL_E2E_ETCD_PEER_PORT TIDAL_E2E_APISERVER_PORT \
  TIDAL_E2E_KWOK_PORT TIDAL_E2E_SCHED_PORT TIDAL_E2E_ENGINE_HTTP_PORT TIDAL_E2E_KCM_PORT TIDAL_E2E_TOKEN TIDAL_E2E_TIMEOUT

e2e_log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
e2e_die() { e2e_log "ERROR: $*"; exit 1; }

# e2e_now_ms: wall clock in milliseconds (for timings).
e2e_now_ms() { date +%s%3N; }

# e2e_need CMD...: fail with an install hint when a host command is missing.
e2e_need() {
  local c; for c in "$@"; do
    command -v "$c" >/dev/null || e2e_die "'$c' not found (Debian: apt-get install -y openssl curl)"
  done
}

# e2e_port_free PORT: true when nothing listens on 127.0.0.1:PORT.
e2e_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# e2e_starttime PID: the process's start time (clock ticks since boot, /proc/PID/stat field 22). It is
# set at fork and kept across exec, so "PID + start time" identifies one process even if PIDs are reused.
# Prints nothing (and fails) when PID does not exist or is a zombie (exited, not yet reaped).
e2e_starttime() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }                     # drop "pid (comm) ": the first field left is field 3 (state)
  # shellcheck disable=SC2086
  set -- $s
  [ "$1" != Z ] && [ "$1" != X ] || return 1
  echo "${20}"
}

# e2e_start BASE NAME CMD...: start CMD in the background, stdin closed, output to BASE/log/NAME.log,
# and record "PID STARTTIME CMD" in BASE/run/NAME.pid (cluster-down.sh stops everything recorded there).
e2e_start() {
  local base=$1 name=$2; shift 2
  mkdir -p "$base/run" "$base/log"
  "$@" </dev/null >"$base/log/$name.log" 2>&1 &
  local pid=$! st
  st=$(e2e_starttime "$pid") || st=exited
  echo "$pid $st $1" >"$base/run/$name.pid"
}

# e2e_alive BASE NAME: the recorded process is still running (same PID and start time).
e2e_alive() {
  local f=$1/run/$2.pid pid st rest
  [ -f "$f" ] || return 1
  read -r pid st rest <"$f" || return 1
  [ -n "$pid" ] && [ -n "$st" ] && [ "$(e2e_starttime "$pid")" = "$st" ]
}

# e2e_stop BASE NAME [GRACE_S]: SIGTERM, wait up to GRACE_S (default 10), then SIGKILL; remove the pid file.
e2e_stop() {
  local base=$1 name=$2 grace=${3:-10} f pid st rest i
  f=$base/run/$name.pid
  [ -f "$f" ] || return 0
  read -r pid st rest <"$f" || true
  if e2e_alive "$base" "$name"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do [ "$(e2e_starttime "$pid")" = "$st" ] || break; sleep 0.1; done
    if [ "$(e2e_starttime "$pid")" = "$st" ]; then
      e2e_log "$name (pid $pid) ignored SIGTERM for ${grace}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do [ "$(e2e_starttime "$pid")" = "$st" ] || break; sleep 0.1; done
    fi
  fi
  rm -f "$f"
}

# e2e_wait BASE NAME DESC CMD...: poll CMD every 0.1 s until it succeeds; fail early when the process
# NAME died, or after TIDAL_E2E_TIMEOUT seconds. Prints the tail of NAME's log on failure.
e2e_wait() {
  local base=$1 name=$2 desc=$3; shift 3
  local deadline=$((SECONDS + TIDAL_E2E_TIMEOUT))
  while ! "$@" >/dev/null 2>&1; do
    if [ -n "$name" ] && ! e2e_alive "$base" "$name"; then
      e2e_log "$name exited while waiting for $desc; last log lines:"; tail -n 30 "$base/log/$name.log" >&2
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      e2e_log "timed out after ${TIDAL_E2E_TIMEOUT}s waiting for $desc"
      [ -z "$name" ] || tail -n 30 "$base/log/$name.log" >&2
      return 1
    fi
    sleep 0.1
  done
}

# e2e_kubectl BASE ARGS...: kubectl against the cluster in BASE.
e2e_kubectl() { local base=$1; shift; "$TIDAL_E2E_TOOLS_BIN/kubectl" --kubeconfig="$base/kubeconfig" "$@"; }

# e2e_rss_kb BASE NAME: resident set size of a started process in KiB (empty when not running).
e2e_rss_kb() {
  local pid rest
  [ -f "$1/run/$2.pid" ] && read -r pid rest <"$1/run/$2.pid" && awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null
}
