# shellcheck shell=bash
# A real single-host Slurm 22.05 (Debian 12 packages) for tests: munged, slurmctld and N slurmd
# (multiple-slurmd: one slurmd per node name on one host, each on its own port), fake GPUs as gres
# whose File= are symlinks to /dev/null, the Tidal submit gate (deploy/slurm/job_submit.lua).
# Everything binds 127.0.0.1, runs as root, and is stopped by the PIDs recorded under BASE/run.
# Source it; do not run it.
#
#   slurm_up BASE NODES GPUS [NODE_PREFIX]   fresh cluster in BASE (wiped), nodes ${NODE_PREFIX:-gpu}01..NN;
#                                            exports SLURM_CONF; returns when every node is idle
#                                            (NODES is ignored when SLURM_NODE_NAMES is set; on failure
#                                            it stops what it started, logs stay in BASE/log)
#   slurm_down BASE                          cancel jobs, stop every daemon by PID (TERM, then KILL)
#   slurm_restart_ctld BASE                  restart slurmctld WITHOUT -c (saved state kept)
#   slurm_as USER CMD...                     run a Slurm command as a non-root user
#   slurm_submit_as USER SBATCH_ARGS...      sbatch --parsable as USER; prints the job id
#   slurm_job_field JOBID FIELD              one field of `scontrol -o show job` (JobState, Reason, Priority, NodeList, ...)
#   slurm_wait_job JOBID STATE [SECONDS=20]  poll until JobState is STATE (non-zero on timeout)
#   slurm_wait_nodes_idle [SECONDS]          poll until every node is idle
#   slurm_ensure_user USER                   create USER (useradd) if missing; names tidal* only
#
# Environment (all optional):
#   SLURM_CTLD_PORT=16817        slurmctld port
#   SLURM_NODE_PORT0=17001       first slurmd port (node i listens on SLURM_NODE_PORT0+i-1)
#   SLURM_NODE_NAMES="a b c"     explicit node names (overrides NODES and NODE_PREFIX; e.g. KWOK's names)
#   SLURM_NODE_FEATURES          lines "name=feat1,feat2" -> Features= of that node (e.g. tidal-leaf-l0)
#   SLURM_TOPOLOGY_CONF=FILE     copied to BASE/etc/topology.conf, sets TopologyPlugin=topology/tree
#   SLURM_GATE=FILE|none         job_submit.lua to install (default: deploy/slurm/job_submit.lua);
#                                none: no JobSubmitPlugins (Slurm schedules on its own)
#   SLURM_CLI_FILTER=FILE        cli_filter.lua to install (CliFilterPlugins=lua; e.g.
#                                deploy/slurm/cli_filter.lua); default none
#   SLURM_GPU_TYPE=a100          gres type of the fake GPUs
#   SLURM_NODE_CPUS=32 SLURM_NODE_MEM=256000   what each node claims (config_overrides)
#   SLURM_EXTRA_CONF             extra slurm.conf lines, appended verbatim
#   SLURM_UP_TIMEOUT=30          seconds to wait for the daemons
#   SLURM_WITH_RESTD=0           1: also start slurmrestd (needs packages slurmrestd + slurm-wlm-jwt-plugin)
#   SLURM_REST_PORT=16820        slurmrestd port (http://127.0.0.1:PORT, JWT: `scontrol token`)
#   SLURM_BIND=auto              auto: loopback via a UTS namespace named localhost if possible;
#                                host: never unshare (bind to what this host name resolves to, if loopback)
#
# Layout of BASE: etc/ (slurm.conf gres.conf job_submit.lua [topology.conf]) log/ (daemon logs,
# jobcomp.txt) run/ (*.bgpid, sockets) state/ spool/<node>/ dev/ (fake GPUs) jobs/ (cwd of jobs, 1777).

SLURM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SLURM_REPO_ROOT=$(cd "$SLURM_LIB_DIR/../.." && pwd)

_slurm_log() { printf '[slurm %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# _slurm_start BASE NAME CMD...: start a daemon in the foreground mode of its own, detached from
# our stdin/stdout (ctest waits for those), its PID in BASE/run/NAME.bgpid.
_slurm_start() {
  local base=$1 name=$2; shift 2
  if [ "$(cat "$base/run/bind" 2>/dev/null)" = uts ]; then
    # own UTS namespace whose host name is "localhost": with NoCtldInAddrAny/NoInAddrAny the daemons
    # bind to what their host name resolves to, i.e. 127.0.0.1 (same PID: unshare and sh exec)
    set -- unshare --uts sh -c 'hostname localhost && exec "$@"' sh "$@"
  fi
  (cd "$base" && exec "$@" </dev/null >"$base/log/$name.out" 2>&1) &
  echo $! >"$base/run/$name.bgpid"
}

# _slurm_bind_mode: how the daemons get to listen on loopback only. Slurm binds INADDR_ANY unless
# CommunicationParameters=NoCtldInAddrAny,NoInAddrAny, which bind to the address gethostname()
# resolves to. "uts": run them in a UTS namespace named localhost (needs CAP_SYS_ADMIN: root);
# "host:ADDR": this host's name already resolves to loopback ADDR; "any": neither, bind all (warned).
_slurm_bind_mode() {
  local a
  if [ "${SLURM_BIND:-auto}" != host ] && unshare --uts true 2>/dev/null; then echo uts; return; fi
  a=$(getent ahostsv4 "$(hostname)" 2>/dev/null | awk 'NR == 1 {print $1}')
  case $a in 127.*) echo "host:$a" ;; *) echo any ;; esac
}

# _slurm_port_busy PORT: something already listens on 127.0.0.1:PORT.
_slurm_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# _slurm_alive BASE NAME: the daemon is still running (else print the tail of its output).
_slurm_alive() {
  local f="$1/run/$2.bgpid"
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && return 0
  _slurm_log "$2 is not running; last output:"
  tail -n 15 "$1/log/$2.out" "$1/log/$2.log" >&2 2>/dev/null
  return 1
}

# _slurm_stop_pid PID LABEL: TERM, wait up to 5 s, then KILL.
_slurm_stop_pid() {
  local p=$1 label=$2 i
  kill "$p" 2>/dev/null || return 0
  for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  # slurmd ignores SIGTERM while it retries registering with a slurmctld that is gone
  if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null; _slurm_log "SIGKILL $label ($p)"; fi
  for i in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
}

slurm_ensure_user() {
  local u=${1:?user}
  id -u "$u" >/dev/null 2>&1 && return 0
  case $u in tidal*) ;; *) _slurm_log "user $u does not exist (only tidal* users are created)"; return 1 ;; esac
  useradd --no-create-home --user-group --shell /bin/sh "$u" >/dev/null || { _slurm_log "useradd $u failed"; return 1; }
}

# slurm_up: on failure it stops what it started (logs stay in BASE/log) and returns non-zero.
slurm_up() {
  _slurm_up "$@" && return 0
  [ -n "${1:-}" ] && [ -d "$1/run" ] && slurm_down "$1"
  return 1
}

_slurm_up() {
  local base=${1:?usage: slurm_up BASE NODES GPUS [NODE_PREFIX]} nodes=${2:?nodes} gpus=${3:?gpus} prefix=${4:-gpu}
  local ctld_port=${SLURM_CTLD_PORT:-16817} port0=${SLURM_NODE_PORT0:-17001}
  local gtype=${SLURM_GPU_TYPE:-a100} cpus=${SLURM_NODE_CPUS:-32} mem=${SLURM_NODE_MEM:-256000}
  local timeout=${SLURM_UP_TIMEOUT:-30} gate=${SLURM_GATE:-$SLURM_REPO_ROOT/deploy/slurm/job_submit.lua}
  local host names=() n i line feat
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null || {
    _slurm_log "slurmctld/slurmd/munged not installed (apt-get install slurm-wlm munge)"; return 1; }
  local bind addr=127.0.0.1 commp=""
  bind=$(_slurm_bind_mode)
  case $bind in
    uts) host=localhost; commp="NoCtldInAddrAny,NoInAddrAny" ;;
    host:*) host=$(hostname -s); addr=${bind#host:}; commp="NoCtldInAddrAny,NoInAddrAny" ;;
    *) host=$(hostname -s); _slurm_log "WARNING: no UTS namespace and $(hostname) does not resolve to loopback: daemons bind all addresses" ;;
  esac
  if [ -n "${SLURM_NODE_NAMES:-}" ]; then
    read -r -a names <<<"$SLURM_NODE_NAMES"
  else
    for i in $(seq 1 "$nodes"); do names+=("$(printf '%s%02d' "$prefix" "$i")"); done
  fi
  [ "${#names[@]}" -gt 0 ] || { _slurm_log "no nodes"; return 1; }
  # leftovers of an earlier run in the same BASE (a killed test): stop them first
  if compgen -G "$base/run/*.bgpid" >/dev/null; then _slurm_log "stopping leftovers in $base"; slurm_down "$base"; fi
  for ((i = 0; i < ${#names[@]}; i++)); do
    if _slurm_port_busy $((port0 + i)); then _slurm_log "port $((port0 + i)) (slurmd ${names[i]}) is in use: set SLURM_NODE_PORT0"; return 1; fi
  done
  if [ "${SLURM_WITH_RESTD:-0}" = 1 ] && _slurm_port_busy "${SLURM_REST_PORT:-16820}"; then
    _slurm_log "port ${SLURM_REST_PORT:-16820} (slurmrestd) is in use: set SLURM_REST_PORT"; return 1; fi
  if _slurm_port_busy "$ctld_port"; then _slurm_log "port $ctld_port (slurmctld) is in use: set SLURM_CTLD_PORT"; return 1; fi
  rm -rf "$base"
  mkdir -p "$base"/{etc,munge,run,log,state,dev,jobs} || return 1
  echo "${bind%%:*}" >"$base/run/bind"
  chmod 755 "$base" "$base"/{etc,run,log}; chmod 700 "$base/munge" "$base/state"; chmod 1777 "$base/jobs"
  for n in "${names[@]}"; do mkdir -p "$base/spool/$n"; done   # slurmd won't create its spool dir
  for ((i = 0; i < gpus; i++)); do ln -s /dev/null "$base/dev/nvidia$i"; done   # fake GPU "devices"
  touch "$base/etc/plugstack.conf"

  # node -> features
  declare -A features=()
  while IFS= read -r line; do
    line=${line//[[:space:]]/}; [ -n "$line" ] || continue
    features[${line%%=*}]=${line#*=}
  done <<<"${SLURM_NODE_FEATURES:-}"

  local conf="$base/etc/slurm.conf"
  {
    cat <<CONF
# Generated by test/slurm/lib.sh (slurm_up $base). Single host, every daemon on 127.0.0.1.
ClusterName=tidaltest
SlurmctldHost=${host}(${addr})
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${ctld_port}
AuthType=auth/munge
AuthInfo=socket=${base}/run/munge.socket.2
CredType=cred/munge
StateSaveLocation=${base}/state
SlurmdSpoolDir=${base}/spool/%n
SlurmctldPidFile=${base}/run/slurmctld.pid
SlurmdPidFile=${base}/run/slurmd-%n.pid
SlurmctldLogFile=${base}/log/slurmctld.log
SlurmdLogFile=${base}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# one line per finished job (account, start, end, nodes, TRES): closes accounting gaps
JobCompType=jobcomp/filetxt
JobCompLoc=${base}/log/jobcomp.txt
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# without a default, a job with no --mem gets the WHOLE node's memory (one job per node)
DefMemPerCPU=1024
# trust CPUs/RealMemory below instead of this host's real hardware
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
PlugStackConfig=${base}/etc/plugstack.conf
GresTypes=gpu
${commp:+CommunicationParameters=$commp}
# NOTE: AccountingStorageTRES=gres/gpu is FATAL without slurmdbd
CONF
    if [ "$gate" != none ]; then
      echo "# Tidal's gate: slurmctld loads job_submit.lua from the directory of slurm.conf"
      echo "JobSubmitPlugins=lua"
    fi
    if [ -n "${SLURM_TOPOLOGY_CONF:-}" ]; then echo "TopologyPlugin=topology/tree"; fi
    if [ -n "${SLURM_CLI_FILTER:-}" ]; then echo "CliFilterPlugins=lua"; fi
    if [ "${SLURM_WITH_RESTD:-0}" = 1 ]; then
      echo "AuthAltTypes=auth/jwt"
      echo "AuthAltParameters=jwt_key=${base}/etc/jwt_hs256.key"
    fi
    i=0
    for n in "${names[@]}"; do
      feat=${features[$n]:-}
      printf 'NodeName=%s NodeHostname=%s NodeAddr=%s Port=%d CPUs=%d RealMemory=%d%s%s State=UNKNOWN\n' \
        "$n" "$host" "$addr" $((port0 + i)) "$cpus" "$mem" \
        "$( [ "$gpus" -gt 0 ] && echo " Gres=gpu:${gtype}:${gpus}")" "${feat:+ Features=$feat}"
      i=$((i + 1))
    done
    echo "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    [ -z "${SLURM_EXTRA_CONF:-}" ] || printf '%s\n' "$SLURM_EXTRA_CONF"
  } >"$conf"
  {
    echo "# 22.05 drops File-less GPUs; File= must stat() as a char/block device -> symlinks to /dev/null"
    echo "AutoDetect=off"
    if [ "$gpus" -gt 0 ]; then
      for n in "${names[@]}"; do
        echo "NodeName=$n Name=gpu Type=$gtype File=$base/dev/nvidia[0-$((gpus - 1))]"
      done
    fi
  } >"$base/etc/gres.conf"
  if [ "$gate" != none ]; then
    [ -f "$gate" ] || { _slurm_log "gate $gate not found"; return 1; }
    cp "$gate" "$base/etc/job_submit.lua"
  fi
  if [ -n "${SLURM_TOPOLOGY_CONF:-}" ]; then cp "$SLURM_TOPOLOGY_CONF" "$base/etc/topology.conf" || return 1; fi
  if [ -n "${SLURM_CLI_FILTER:-}" ]; then cp "$SLURM_CLI_FILTER" "$base/etc/cli_filter.lua" || return 1; fi
  printf '%s\n' "${names[@]}" >"$base/run/nodes"
  export SLURM_CONF="$conf"

  if [ "${SLURM_WITH_RESTD:-0}" = 1 ]; then
    [ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/auth_jwt.so ] && command -v slurmrestd >/dev/null || {
      _slurm_log "SLURM_WITH_RESTD=1 needs: apt-get install slurmrestd slurm-wlm-jwt-plugin"; return 1; }
    dd if=/dev/urandom of="$base/etc/jwt_hs256.key" bs=32 count=1 status=none; chmod 600 "$base/etc/jwt_hs256.key"
  fi
  mungekey --create --keyfile="$base/munge/munge.key" || return 1
  chmod 600 "$base/munge/munge.key"
  _slurm_start "$base" munged munged -F --socket="$base/run/munge.socket.2" --key-file="$base/munge/munge.key" \
    --pid-file="$base/run/munged.pid" --seed-file="$base/munge/munged.seed" --log-file="$base/log/munged.log"
  for i in $(seq 100); do [ -S "$base/run/munge.socket.2" ] && break; _slurm_alive "$base" munged || return 1; sleep 0.05; done

  _slurm_start "$base" slurmctld slurmctld -D -c -i -f "$conf"    # -c: clean state
  _slurm_wait_ctld "$base" "$timeout" || return 1
  for n in "${names[@]}"; do _slurm_start "$base" "slurmd-$n" slurmd -D -N "$n" -f "$conf"; done

  if [ "${SLURM_WITH_RESTD:-0}" = 1 ]; then
    # slurmrestd refuses uid 0: drop to nobody; SLURM_JWT=daemon: it talks to slurmctld with auth/jwt;
    # -s openapi/v0.0.38 only (the dbv0.0.38 plugin is fatal without slurmdbd)
    SLURM_JWT=daemon _slurm_start "$base" slurmrestd slurmrestd -u nobody -g nogroup -a rest_auth/jwt \
      -s openapi/v0.0.38 "127.0.0.1:${SLURM_REST_PORT:-16820}"
  fi
  slurm_wait_nodes_idle "$timeout" || return 1
  if [ "${SLURM_WITH_RESTD:-0}" = 1 ]; then _slurm_alive "$base" slurmrestd || return 1; fi
  _slurm_log "up: ${#names[@]} node(s) x ${gpus} ${gtype}, SLURM_CONF=$conf"
}

# _slurm_wait_ctld BASE SECONDS: slurmctld answers `scontrol ping`.
_slurm_wait_ctld() {
  local base=$1 t=$2 deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    _slurm_alive "$base" slurmctld || return 1
    scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
    sleep 0.1
  done
  _slurm_log "slurmctld did not answer within ${t}s"; tail -n 15 "$base/log/slurmctld.log" >&2; return 1
}

_slurm_conf_base() { local c=${SLURM_CONF:?SLURM_CONF not set (slurm_up exports it)}; dirname "$(dirname "$c")"; }

# slurm_wait_nodes_idle [SECONDS]: every node of the cluster in SLURM_CONF is idle (and responding).
slurm_wait_nodes_idle() {
  local t=${1:-${SLURM_UP_TIMEOUT:-30}} base want got=0 n deadline
  base=$(_slurm_conf_base); want=$(wc -l <"$base/run/nodes"); deadline=$((SECONDS + t))
  while [ $SECONDS -lt $deadline ]; do
    _slurm_alive "$base" slurmctld || return 1
    for n in $(cat "$base/run/nodes"); do _slurm_alive "$base" "slurmd-$n" || return 1; done
    # %T prints e.g. "idle", "idle*" (not responding), "idle~", "drained"
    got=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)
    [ "$got" = "$want" ] && return 0
    sleep 0.2
  done
  _slurm_log "only $got of $want nodes idle after ${t}s:"; sinfo -N -o '%N %T %E' >&2 || true
  return 1
}

# _slurm_kill_stepds BASE: slurmstepd (a job's parent, daemonised) outlives its slurmd. Ours are the
# ones holding a file under BASE open (the slurmd log); stop them and what they run, by PID.
_slurm_kill_stepds() {
  local base=$1 d p fd pids=() kids
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
    for fd in "$d"/fd/*; do
      case $(readlink "$fd" 2>/dev/null) in "$base"/*) pids+=("${d#/proc/}"); break ;; esac
    done
  done
  [ "${#pids[@]}" -gt 0 ] || return 0
  for p in "${pids[@]}"; do
    kids=$(awk -v pp="$p" '$4 == pp {print $1}' /proc/[0-9]*/stat 2>/dev/null)
    _slurm_log "stopping slurmstepd $p${kids:+ and its children $kids}"
    for k in $kids; do _slurm_stop_pid "$k" "job process"; done
    _slurm_stop_pid "$p" slurmstepd
  done
}

slurm_down() {
  local base=${1:?usage: slurm_down BASE} f p ids
  local SLURM_CONF="$base/etc/slurm.conf"; export SLURM_CONF
  # cancel jobs first: slurmstepd (the job's parent) outlives a stopped slurmd
  if [ -f "$base/run/slurmctld.bgpid" ] && kill -0 "$(cat "$base/run/slurmctld.bgpid")" 2>/dev/null \
     && timeout 5 scontrol ping >/dev/null 2>&1; then
    ids=$(timeout 5 squeue -h -o %i 2>/dev/null || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      timeout 5 scancel --quiet --full $ids 2>/dev/null || true
      for _ in $(seq 50); do [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
    fi
  fi
  for f in "$base"/run/slurmrestd.bgpid "$base"/run/slurmd-*.bgpid "$base"/run/slurmctld.bgpid; do
    [ -f "$f" ] || continue
    p=$(cat "$f"); _slurm_stop_pid "$p" "$(basename "$f" .bgpid)"; rm -f "$f"
  done
  _slurm_kill_stepds "$base"
  if [ -f "$base/run/munged.bgpid" ]; then
    _slurm_stop_pid "$(cat "$base/run/munged.bgpid")" munged; rm -f "$base/run/munged.bgpid"
  fi
  return 0
}

slurm_restart_ctld() {
  local base=${1:?usage: slurm_restart_ctld BASE} t=${SLURM_UP_TIMEOUT:-30} deadline want got=0
  export SLURM_CONF="$base/etc/slurm.conf"
  [ -f "$base/run/slurmctld.bgpid" ] && _slurm_stop_pid "$(cat "$base/run/slurmctld.bgpid")" slurmctld
  _slurm_start "$base" slurmctld slurmctld -D -i -f "$SLURM_CONF"   # no -c: recover StateSaveLocation
  _slurm_wait_ctld "$base" "$t" || return 1
  # every node known again and responding (whatever its state: idle, allocated, drained, ...)
  want=$(wc -l <"$base/run/nodes"); deadline=$((SECONDS + t))
  while [ $SECONDS -lt $deadline ]; do
    got=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 !~ /[*~#]$/ && $2 !~ /^(unknown|down)/' | sort -u | wc -l)
    [ "$got" = "$want" ] && return 0
    sleep 0.2
  done
  _slurm_log "after restart only $got of $want nodes respond:"; sinfo -N -o '%N %T %E' >&2 || true
  return 1
}

# slurm_as USER CMD...: CMD as USER (created if missing, tidal* names only), with this SLURM_CONF,
# from BASE/jobs (world-writable: where the job's cwd and default output go).
slurm_as() {
  local u=${1:?usage: slurm_as USER CMD...}; shift
  local base dir=/tmp
  slurm_ensure_user "$u" || return 1
  base=$(_slurm_conf_base)
  if ! runuser -u "$u" -- test -r "$SLURM_CONF" -a -w "$base/run/munge.socket.2" 2>/dev/null; then
    _slurm_log "$u cannot read $SLURM_CONF or reach the munge socket: BASE must be under a directory others can enter (e.g. /tmp)"
    return 1
  fi
  runuser -u "$u" -- test -w "$base/jobs" 2>/dev/null && dir="$base/jobs"
  (cd "$dir" && runuser -u "$u" -- env SLURM_CONF="$SLURM_CONF" "$@")
}

# slurm_submit_as USER SBATCH_ARGS...: prints the job id (sbatch --parsable; cluster suffix dropped).
slurm_submit_as() {
  local u=${1:?usage: slurm_submit_as USER SBATCH_ARGS...} out; shift
  out=$(slurm_as "$u" sbatch --parsable "$@") || return 1
  echo "${out%%;*}"
}

# slurm_job_field JOBID FIELD: value of FIELD in `scontrol -o show job JOBID` (values with spaces,
# e.g. Comment, are returned whole: up to the next " Key=").
slurm_job_field() {
  local j=${1:?jobid} f=${2:?field}
  scontrol -o show job "$j" 2>/dev/null | awk -v f="$f" '{
    n = split($0, w, " "); v = ""; on = 0
    for (i = 1; i <= n; i++) {
      if (w[i] ~ /^[A-Za-z][A-Za-z0-9_:\/]*=/) { if (on) break; if (index(w[i], f "=") == 1) { on = 1; v = substr(w[i], length(f) + 2); continue } }
      else if (on) v = v " " w[i]
    }
    if (on) print v }'
}

slurm_wait_job() {
  local j=${1:?jobid} want=${2:?state} t=${3:-20} deadline s=""
  deadline=$((SECONDS + t))
  while [ $SECONDS -lt $deadline ]; do
    s=$(slurm_job_field "$j" JobState)
    [ "$s" = "$want" ] && return 0
    sleep 0.2
  done
  _slurm_log "job $j is ${s:-unknown}, not $want, after ${t}s"; return 1
}
