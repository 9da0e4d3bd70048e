# shellcheck shell=bash
# Helpers of test/slurm/adapter_test.sh (sourced by it, after lib.sh): the engine and adapter
# processes, metrics, polling, the cluster-wide invariants sampled under load, and the load itself.
# Uses BIN (tidal-engine, tidal-slurm), BASE, RUN (BASE/tidal), ENGINE_PORT, ENGINE_HTTP, AD_METRICS, AD2_METRICS, USER_, RUNLOG.

# --- output
check() { echo "ok: $*"; }
note() { echo "   $*"; }
fail() {
  echo "FAIL: $*"
  echo "--- squeue"; squeue -o '%i %a %T %r %N %k' 2>/dev/null | head -40 || true
  echo "--- jobs (AdminComment)"
  scontrol -o show job 2>/dev/null | grep -o 'JobId=[0-9]* \|JobState=[A-Z]* \|ReqNodeList=[^ ]* \|AdminComment=[^=]*' |
    paste -sd' ' | sed 's/JobId=/\nJobId=/g' | tail -40 || true
  for f in "$RUN"/adapter.log "$RUN"/adapter2.log "$RUN"/engine.log; do
    [ -f "$f" ] && { echo "--- $(basename "$f") (tail)"; tail -n 15 "$f"; }
  done
  echo "--- slurmctld.log (tail)"; tail -n 15 "$BASE/log/slurmctld.log" 2>/dev/null || true
  exit 1
}

# wait_for SECONDS WHAT CMD...: poll CMD every 0.2 s until it succeeds; fail with WHAT on timeout.
wait_for() {
  local t=$1 what=$2 deadline; shift 2
  deadline=$(($(date +%s%N) / 1000000 + t * 1000))
  until "$@"; do
    [ $(($(date +%s%N) / 1000000)) -lt "$deadline" ] || fail "after ${t}s: $what"
    sleep 0.2
  done
}

# holds_for SECONDS WHAT CMD...: CMD succeeds at every poll (0.25 s) for SECONDS, else fail WHAT.
holds_for() {
  local t=$1 what=$2 deadline; shift 2
  deadline=$(($(date +%s%N) / 1000000 + t * 1000))
  while [ $(($(date +%s%N) / 1000000)) -lt "$deadline" ]; do
    "$@" || fail "$what"
    sleep 0.25
  done
}

# --- metrics of an adapter (PORT default AD_METRICS)
metric() { curl -s --max-time 2 "http://127.0.0.1:${2:-$AD_METRICS}/metrics" 2>/dev/null | awk -v m="$1" '$1 == m {print $2; exit}'; }
metric_is() { [ "$(metric "$1" "${3:-$AD_METRICS}")" = "$2" ]; }
metric_above() { local v; v=$(metric "$1" "${3:-$AD_METRICS}"); [ -n "$v" ] && awk -v v="$v" -v x="$2" 'BEGIN {exit !(v > x)}'; }

# --- processes (started by this test, stopped by their recorded PID only)
_alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }
_stop() {  # _stop NAME [SIGNAL]: signal, wait up to 5 s, KILL
  local name=$1 sig=${2:-TERM} p i
  [ -f "$RUN/$name.pid" ] || return 0
  p=$(cat "$RUN/$name.pid")
  kill -"$sig" "$p" 2>/dev/null || true
  for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  { wait "$p"; } 2>/dev/null || true
  rm -f "$RUN/$name.pid"
}

engine_start() {
  "$BIN/tidal-engine" --listen "127.0.0.1:$ENGINE_PORT" --http-addr "127.0.0.1:$ENGINE_HTTP" \
    --config "$RUN/engine.yaml" --decision-log "$RUN/decisions.log" </dev/null >>"$RUN/engine.log" 2>&1 &
  echo $! >"$RUN/engine.pid"
  wait_for 15 "tidal-engine answers /healthz on $ENGINE_HTTP" _engine_ready
}
_engine_ready() { _alive engine || fail "tidal-engine exited"; curl -sf --max-time 1 "http://127.0.0.1:$ENGINE_HTTP/healthz" >/dev/null; }
engine_stop() { _stop engine "${1:-TERM}"; }

# adapter_start [ARGS...]: the adapter under test (holder tidal-slurm@test), up within 15 s.
adapter_start() {
  "$BIN/tidal-slurm" --engine "127.0.0.1:$ENGINE_PORT" --config "$RUN/adapter.yaml" \
    --metrics "127.0.0.1:$AD_METRICS" --holder tidal-slurm@test "$@" </dev/null >>"$RUN/adapter.log" 2>&1 &
  echo $! >"$RUN/adapter.pid"
  wait_for 15 "tidal-slurm reports tidal_slurm_up 1" _adapter_up
}
_adapter_up() { _alive adapter || fail "tidal-slurm exited"; metric_is tidal_slurm_up 1; }
adapter_stop() { _stop adapter "${1:-TERM}"; }

# --- jobs
# submit ACCOUNT SBATCH_ARGS... -- SECONDS: a job of USER_ that logs "JOBID NODE" to RUNLOG when it
# starts, then sleeps SECONDS. Prints the job id.
submit() {
  local acct=$1; shift
  local args=() secs
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  secs=$2
  slurm_submit_as "$USER_" -A "$acct" -o /dev/null "${args[@]}" \
    --wrap "echo \$SLURM_JOB_ID \$SLURMD_NODENAME >>$RUNLOG; sleep $secs" || fail "sbatch $acct ${args[*]}"
}
state_of() { slurm_job_field "$1" JobState; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
# held for Tidal: PENDING, Priority=0, Reason JobHeld*
held() {
  local s p r
  s=$(slurm_job_field "$1" JobState) p=$(slurm_job_field "$1" Priority) r=$(slurm_job_field "$1" Reason)
  [ "$s" = PENDING ] && [ "$p" = 0 ] && case $r in JobHeld*) true ;; *) false ;; esac
}
comment_has() { case $(slurm_job_field "$1" AdminComment) in *"$2"*) true ;; *) false ;; esac; }
hosts() { [ -n "$1" ] && [ "$1" != "(null)" ] && scontrol show hostnames "$1" | sort | paste -sd, -; }
# ran_where_pinned JOB: NodeList == ReqNodeList (as sets) and AdminComment says Tidal released it there
ran_where_pinned() {
  local n r
  n=$(hosts "$(slurm_job_field "$1" NodeList)") r=$(hosts "$(slurm_job_field "$1" ReqNodeList)")
  [ -n "$n" ] && [ "$n" = "$r" ] && comment_has "$1" "tidal: released to"
}
# leaf_of NODE: the value of its tidal-leaf-* feature
leaf_of() { scontrol -o show node "$1" | grep -o 'ActiveFeatures=[^ ]*' | tr ',=' '\n\n' | sed -n 's/^tidal-leaf-//p'; }
cancel_all() {
  local ids
  # an array's pending record reads 12_[4-49%2]: scancel refuses the %2
  ids=$(squeue -h -o %i 2>/dev/null | sed 's/%[0-9]*]$/]/' | paste -sd' ' -)
  # shellcheck disable=SC2086
  [ -z "$ids" ] || scancel $ids
  wait_for 30 "every job gone from squeue" _queue_empty
  slurm_wait_nodes_idle 30 || fail "nodes not idle after cancelling"
}
_queue_empty() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }

# --- invariants, one consistent snapshot each (scontrol answers from one slurmctld read lock):
#  1. per node, the GPUs of jobs RUNNING/COMPLETING there plus those of PENDING jobs Tidal released
#     pinned there (AdminComment "tidal: released", capacity Slurm must hold for them) <= the node's
#     GPUs: Tidal never commits a GPU twice;
#  2. Slurm's allocation, GPU by GPU (per-node GRES=gpu:a100:2(IDX:0-1) of `show job -d`): no GPU
#     index of a node held by two jobs, and no more in use than the node has. (The node's own
#     GresUsed is not used: Slurm 22.05 miscounts it after a slurmctld restart, e.g. 8 of 4 or 2
#     where jobs hold 4, and drops its IDX list.)
#  3. every RUNNING job runs exactly on its ReqNodeList (where Tidal pinned it).
# Prints the violation and returns 1. SAMPLES counts the snapshots taken.
SAMPLES=0
invariants() {
  local jobs nodes out
  jobs=$(scontrol -o show job -d 2>/dev/null) || return 0   # slurmctld down: nothing to check
  nodes=$(scontrol -o show node 2>/dev/null) || return 0
  SAMPLES=$((SAMPLES + 1))
  out=$(awk -v jobs="$jobs" -v nodes="$nodes" '
    function expand(s, out,   n, i, c, depth, tok, toks, k, pre, body, parts, m, r, a, b, w, j, cnt) {
      # hostlist "gpu[01-03,07],gpu08" -> out[gpu01]=1 ...; returns the count
      if (s == "" || s == "(null)") return 0
      n = 0; depth = 0; tok = ""
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "[") depth++; else if (c == "]") depth--
        if (c == "," && depth == 0) { toks[++n] = tok; tok = "" } else tok = tok c
      }
      toks[++n] = tok; cnt = 0
      for (k = 1; k <= n; k++) {
        if (index(toks[k], "[") == 0) { out[toks[k]] = 1; cnt++; continue }
        pre = substr(toks[k], 1, index(toks[k], "[") - 1)
        body = substr(toks[k], index(toks[k], "[") + 1); sub(/\].*/, "", body)
        m = split(body, parts, ",")
        for (r = 1; r <= m; r++) {
          if (index(parts[r], "-")) {
            a = substr(parts[r], 1, index(parts[r], "-") - 1); b = substr(parts[r], index(parts[r], "-") + 1)
            w = length(a)
            for (j = a + 0; j <= b + 0; j++) { out[pre sprintf("%0" w "d", j)] = 1; cnt++ }
          } else { out[pre parts[r]] = 1; cnt++ }
        }
      }
      return cnt
    }
    function field(line, key,   i, n, w) {
      n = split(line, w, " ")
      for (i = 1; i <= n; i++) if (index(w[i], key "=") == 1) return substr(w[i], length(key) + 2)
      return ""
    }
    function gcount(s,   p, n) { sub(/\(.*/, "", s); n = split(s, p, ":"); return p[n] + 0 }
    BEGIN {
      bad = ""
      nn = split(nodes, nl, "\n")
      for (i = 1; i <= nn; i++) {
        name = field(nl[i], "NodeName"); if (name == "") continue
        cap[name] = gcount(field(nl[i], "Gres"))
      }
      nj = split(jobs, jl, "\n")
      for (i = 1; i <= nj; i++) {
        id = field(jl[i], "JobId"); if (id == "") continue
        st = field(jl[i], "JobState"); g = gcount(field(jl[i], "TresPerNode"))
        released = index(jl[i], "AdminComment=tidal: released") > 0
        split("", on); split("", req)
        if (st == "RUNNING" || st == "COMPLETING" || st == "SUSPENDED") expand(field(jl[i], "NodeList"), on)
        else if (st == "PENDING" && released) expand(field(jl[i], "ReqNodeList"), on)
        for (n in on) { book[n] += g; who[n] = who[n] " " id "(" st "," g ")" }
        if (st == "RUNNING" || st == "COMPLETING" || st == "SUSPENDED") {
          # per-node allocation groups: "Nodes=gpu[05-08] CPU_IDs=0 Mem=1024 GRES=gpu:a100:2(IDX:0-1)"
          m = split(jl[i], w, " "); cur = ""
          for (k = 1; k <= m; k++) {
            if (index(w[k], "Nodes=") == 1) cur = substr(w[k], 7)
            else if (index(w[k], "GRES=") == 1 && cur != "" && match(w[k], /IDX:[0-9,-]+/)) {
              idx = substr(w[k], RSTART + 4, RLENGTH - 4); split("", gn); expand(cur, gn)
              ni = split(idx, ir, ",")
              for (x = 1; x <= ni; x++) {
                lo = ir[x]; hi = ir[x]
                if (index(ir[x], "-")) { lo = substr(ir[x], 1, index(ir[x], "-") - 1); hi = substr(ir[x], index(ir[x], "-") + 1) }
                for (y = lo + 0; y <= hi + 0; y++) for (n in gn) {
                  if ((n, y) in gpu) bad = bad sprintf("node %s GPU %d held by jobs %s and %s; ", n, y, gpu[n, y], id)
                  gpu[n, y] = id; inuse[n]++
                }
              }
              cur = ""
            }
          }
        }
        if (st == "RUNNING") {
          expand(field(jl[i], "ReqNodeList"), req); d = 0
          for (n in on) if (!(n in req)) d = 1
          for (n in req) if (!(n in on)) d = 1
          if (d || !released) bad = bad sprintf("job %s RUNNING on %s, Tidal pinned it to %s (%s); ", id, field(jl[i], "NodeList"), field(jl[i], "ReqNodeList"), released ? "released by Tidal" : "NOT released by Tidal")
        }
      }
      for (n in book) if (book[n] > cap[n]) bad = bad sprintf("node %s: %d GPUs committed > %d:%s; ", n, book[n], cap[n], who[n])
      for (n in inuse) if (inuse[n] > cap[n]) bad = bad sprintf("node %s: Slurm allocated %d GPUs > %d; ", n, inuse[n], cap[n])
      printf "%s", bad
    }')
  [ -z "$out" ] && return 0
  echo "invariant violated: $out"
  return 1
}

# --- load
# submit_load N: N jobs of mixed shapes (nodes x GPUs per node, 2-4 s each), ~2.5x the cluster's
# 32 GPUs for N=16. Sets LOAD (their ids, space-separated).
SHAPES=("1 1" "2 4" "1 2" "4 2" "1 4" "3 1" "2 2" "8 1" "1 3" "4 4" "2 1" "1 1" "3 2" "2 4" "4 1" "1 4")
submit_load() {
  local n=$1 i nn g id
  LOAD=""
  for ((i = 0; i < n; i++)); do
    read -r nn g <<<"${SHAPES[i % ${#SHAPES[@]}]}"
    id=$(submit team-a -N "$nn" --gres=gpu:"$g" -- $((2 + i % 3)))
    LOAD="$LOAD $id"
  done
  LOAD=${LOAD# }
}
released_pending() {  # how many of LOAD are PENDING and released by Tidal now
  scontrol -o show job 2>/dev/null | awk -v ids=" $LOAD " '{
    id = $1; sub(/^JobId=/, "", id)
    if (index(ids, " " id " ") && / JobState=PENDING / && /AdminComment=tidal: released/) c++ } END {print c + 0}'
}
still_held() {  # how many of LOAD are still held for Tidal
  scontrol -o show job 2>/dev/null | awk -v ids=" $LOAD " '{
    id = $1; sub(/^JobId=/, "", id)
    if (index(ids, " " id " ") && / JobState=PENDING / && / Priority=0 /) c++ } END {print c + 0}'
}
# mid_load: some of LOAD released by Tidal but not yet started by Slurm, others still held
mid_load() { [ "$(released_pending)" -ge 1 ] && [ "$(still_held)" -ge 1 ]; }

# load_done SECONDS WHAT: every job of LOAD finished, invariants sampled at every poll; then each ran
# exactly once (one start line in RUNLOG, one jobcomp line, COMPLETED, Restarts=0), and Slurm saw
# each released by Tidal exactly once (slurmctld.log "release hold on JobId=J by uid 0").
load_done() {
  local t=$1 what=$2 t0=$SECONDS deadline j left n c r
  deadline=$((SECONDS + t))
  while :; do
    invariants || fail "$what: GPUs double-booked or a job off its pin"
    left=$(squeue -h -o %i 2>/dev/null | awk -v ids=" $LOAD " 'index(ids, " " $1 " ")' | wc -l)
    [ "$left" = 0 ] && break
    [ $SECONDS -lt $deadline ] || fail "$what: $left job(s) of [$LOAD] still queued after ${t}s"
    sleep 0.3
  done
  for j in $LOAD; do
    n=$(grep -c "^$j " "$RUNLOG" 2>/dev/null || true)
    [ "$n" = 1 ] || fail "$what: job $j started $n time(s) (want 1): $(grep "^$j " "$RUNLOG" | paste -sd' ' -)"
    c=$(grep -c "^JobId=$j " "$BASE/log/jobcomp.txt" 2>/dev/null || true)
    [ "$c" = 1 ] || fail "$what: job $j has $c jobcomp line(s) (want 1)"
    grep -q "^JobId=$j .* JobState=COMPLETED " "$BASE/log/jobcomp.txt" || fail "$what: job $j did not complete: $(grep "^JobId=$j " "$BASE/log/jobcomp.txt" | grep -o 'JobState=[^ ]*')"
    r=$(grep -c "release hold on JobId=$j by uid 0\$" "$BASE/log/slurmctld.log" || true)
    [ "$r" = 1 ] || fail "$what: job $j released $r time(s) by Tidal (want 1)"
  done
  check "$what: $(wc -w <<<"$LOAD") jobs ran exactly once each (runs log, jobcomp COMPLETED, released once), invariants held over $SAMPLES snapshots, drained in $((SECONDS - t0))s"
}
