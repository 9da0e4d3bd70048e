#!/bin/sh
# tidalctl gen's command line (docs/simulator.md, "Generating workloads"): a trace that cannot be
# written whole (a full device, a full stdout) is an error, not exit 0 with the trace lost; a flag
# given an empty value (--load "$UNSET") is refused, not read as "not given"; a bad value is
# quoted as typed. Each check failed on the code before its fix.
# Usage: gen_test.sh TIDALCTL WORK_DIR
# Threading: a plain script, one tidalctl at a time.
set -eu
T=$1
D=$2/tidalctl_gen_cli
rm -rf "$D" && mkdir -p "$D"
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect RC PATTERN ARGS...: tidalctl gen ARGS exits RC and its stderr matches PATTERN.
expect() {
  want=$1 pat=$2; shift 2
  rc=0
  "$T" gen "$@" > "$D/out" 2> "$D/err" || rc=$?
  [ "$rc" = "$want" ] || fail "gen $*: exit $rc, want $want: $(cat "$D/err")"
  grep -q -- "$pat" "$D/err" || fail "gen $*: stderr lacks '$pat': $(cat "$D/err")"
}

# A full device: the trace did not reach the file, and gen said nothing (exit 0).
if [ -w /dev/full ]; then
  # A small trace (under 1 KB) sat in the stream's buffer, and only its flush at exit failed.
  expect 1 'tidalctl gen: cannot write /dev/full: No space left on device' llm-gangs --days 0.01 -o /dev/full
  rc=0
  "$T" gen llm-gangs --days 0.01 -o - > /dev/full 2> "$D/err" || rc=$?
  [ "$rc" = 1 ] || fail "gen -o - > /dev/full: exit $rc: $(cat "$D/err")"
  grep -q 'tidalctl gen: cannot write the trace to stdout' "$D/err" || fail "gen -o - > /dev/full: $(cat "$D/err")"
fi
# A directory: the reason is named.
expect 1 "tidalctl gen: cannot write $D: " llm-gangs --days 0.05 -o "$D"

# Empty values were taken as "not given": the spec's load, days, seed or gpus, silently.
expect 2 'tidalctl gen: --load: expected a number, got ""' llm-gangs --load '' -o "$D/t.csv"
expect 2 'tidalctl gen: --days: expected a number, got ""' llm-gangs --days= -o "$D/t.csv"
expect 2 'tidalctl gen: --seed: expected a whole number >= 0, got ""' llm-gangs --seed '' -o "$D/t.csv"
expect 2 'tidalctl gen: --gpus: expected a whole number >= 0, got ""' llm-gangs --gpus '' -o "$D/t.csv"
# The value as typed (was "80%": one % taken off before quoting it).
expect 2 '--load: expected a number, got "80%%"' llm-gangs --load 80%% -o "$D/t.csv"

# A bare number above 2 is a fraction: --load 90 asked for 9000% (a trace 100 x too big), silently.
expect 2 'tidalctl gen: --load 90: a bare number is a fraction of the GPUs (90 = 9000.0%); write 90% or 0.9' llm-gangs --load 90 -o "$D/t.csv"
expect 0 'target 150.0%' llm-gangs --days 0.05 --load 150% -o "$D/t.csv"
expect 0 'target 150.0%' llm-gangs --days 0.05 --load 1.5 -o "$D/t.csv"

# What works still works: written, read back by tidalctl sim with no row refused.
expect 0 'offered load' llm-gangs --days 0.2 --gpus 512 --load 75% -o "$D/t.csv"
"$T" sim --trace "$D/t.csv" --gpus 512 --policy fifo --on-bad-row fail > /dev/null 2>&1 || fail "sim on the generated trace"
echo ok
