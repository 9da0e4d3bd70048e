#!/bin/sh
# tidalctl sim / gen on what an exploratory test found (docs/simulator.md): Latin-1 names written to
# --out and --report, writes that fail (a full device), usage errors found late or with exit 1,
# --max-jobs 0, --sample-interval over a long trace, and gen specs of billions of jobs.
# Each check failed on the code before its fix. Usage: robust_test.sh TIDALCTL SOURCE_DIR WORK_DIR
# Threading: a plain script, one tidalctl at a time.
set -eu
T=$1
S=$2
D=$3/tidalctl_sim_robust
rm -rf "$D" && mkdir -p "$D"
fail() { echo "FAIL: $*" >&2; exit 1; }
# bounded MIB CMD...: CMD in at most MIB of memory. ulimit -v for a plain build; an ASan build
# reserves terabytes of address space for its shadow (ulimit -v aborts it at start), so there its
# own RSS limit bounds the run.
if grep -q __asan_init "$T" 2>/dev/null; then
  bounded() { mb=$1; shift; ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=$mb" "$@"; }
else
  bounded() { mb=$1; shift; (ulimit -v $((mb * 1024)); "$@"); }
fi
three="$S/test/sim/three_jobs.csv"
echo pass > "$D/noplot.py"  # a plot script that draws nothing

# Latin-1 bytes in a queue, a rejected job's id and the file's name: --out and --report are valid JSON.
printf 'id,submit,duration,gpus,queue\nd,0,100,1,caf\351\ncaf\351,0,100,16,x\n' > "$D/tr$(printf '\351').csv"
"$T" sim --trace "$D/tr$(printf '\351').csv" --gpus 8 --policy fifo --timing off --out "$D/u.json" --report "$D/rep" \
  --plot-script "$D/noplot.py" > /dev/null 2> "$D/u.err" || fail "Latin-1 names: exit $? $(cat "$D/u.err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "caf\u00e9" in json.dumps(d, ensure_ascii=False), d' "$D/u.json" ||
  fail "--out: not JSON with café"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$D/rep/metrics.json" || fail "--report: metrics.json not JSON"

# Writes are checked to the end: a full device is exit 1 naming the file.
if "$T" sim --trace "$three" --gpus 8 --policy fifo --out /dev/full > /dev/null 2> "$D/full.err"; then fail "--out /dev/full: exit 0"; fi
grep -q 'cannot write /dev/full: No space left on device' "$D/full.err" || fail "--out /dev/full: $(cat "$D/full.err")"
mkdir -p "$D/fullrep" && ln -sf /dev/full "$D/fullrep/metrics.json"
if "$T" sim --trace "$three" --gpus 8 --policy fifo --report "$D/fullrep" --plot-script "$D/noplot.py" > /dev/null 2> "$D/fullrep.err"; then
  fail "--report onto a full device: exit 0"
fi
grep -q 'cannot write .*fullrep/metrics.json' "$D/fullrep.err" || fail "--report full: $(cat "$D/fullrep.err")"

# Usage errors: exit 2 with the command's prefix, before any replay.
usage() {  # usage PATTERN ARGS...: exit 2, the pattern on stderr, nothing replayed
  pat=$1
  shift
  rc=0
  "$T" sim "$@" > /dev/null 2> "$D/usage.err" || rc=$?
  [ "$rc" = 2 ] || fail "$*: exit $rc, not 2: $(cat "$D/usage.err")"
  grep -q -- "$pat" "$D/usage.err" || fail "$*: no \"$pat\": $(cat "$D/usage.err")"
  if grep -q replaying "$D/usage.err"; then fail "$*: replayed before refusing"; fi
}
usage 'tidalctl sim: --load-scale: must be in \[1e-6, 1e6\]' --trace "$three" --load-scale 0
usage 'tidalctl sim: --load-scale: must be in \[1e-6, 1e6\] .*got 2e+06' --trace "$three" --load-scale 2e6
usage 'tidalctl sim: --limit-factor: must be in \[1, 1e6\] .*got 1e+300' --trace "$three" --limit-factor 1e300
usage 'tidalctl sim: --format: unknown trace format "bogus"' --trace "$three" --format bogus
usage 'tidalctl sim: --from:' --trace "$three" --from -5
usage 'tidalctl sim: --from: invalid date' --trace "$three" --from 2020-02-30
usage 'tidalctl sim: --to:' --trace "$three" --to nan
usage 'tidalctl sim: --to: must be after --from' --trace "$three" --from 20 --to 10
usage 'tidalctl sim: --from: a timestamp needs a trace with timestamps' --trace "$three" --from 2017-10-01
usage 'tidalctl sim: --max-jobs: expected a whole number in 1\.\.' --trace "$three" --max-jobs 0
usage 'tidalctl sim: --policy tidal+lending needs two pools' --trace "$three" --policy fifo,tidal+lending
usage 'tidalctl sim: --policy: all cannot be combined' --trace "$three" --policy all,fifo
usage 'tidalctl sim: --plot-script /nonexistent.py: no such file' --trace "$three" --report "$D/r2" --plot-script /nonexistent.py
usage 'tidalctl sim: --slurm-gpus: expected a whole number in 1\.\.63, got "65"' --trace "$three" --slurm-trace "$three" --gpus 64 --slurm-gpus 65
# --sample-interval over a long trace: refused with the count and the least period that works.
printf 'id,submit,duration,gpus\na,0,400d,1\n' > "$D/long400.csv"
usage 'tidalctl sim: --sample-interval 1 gives 3.46e+07 samples .*at most 200000: give at least 173s' \
  --trace "$D/long400.csv" --gpus 8 --policy fifo --sample-interval 1
# ... and without --report no series is built: a small period on a long trace runs in bounded memory.
bounded 2000 "$T" sim --trace "$D/long400.csv" --gpus 8 --policy fifo --timing off --sample-interval 173 > /dev/null 2>&1 ||
  fail "--sample-interval 173 on 400 days without --report"

# gen: a spec of billions of jobs is refused up front, naming load, days and gpus.
rc=0
bounded 3000 "$T" gen philly-like --load 10000% --days 3650 -o "$D/g.csv" 2> "$D/gen.err" || rc=$?
[ "$rc" = 2 ] || fail "gen --load 10000% --days 3650: exit $rc: $(cat "$D/gen.err")"
grep -q 'jobs: load 100, days 3650 and gpus 2048 give .* jobs in expectation; at most 20000000' "$D/gen.err" ||
  fail "gen: $(cat "$D/gen.err")"
"$T" gen philly-like --load 1e9% -o "$D/g.csv" 2> "$D/gen.err" || true
grep -q 'load: must be in (0, 100]' "$D/gen.err" || fail "gen --load 1e9%: $(cat "$D/gen.err")"
echo ok
