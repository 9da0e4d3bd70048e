#!/usr/bin/env bash
# fuzz/run.sh's verdict on a Go fuzz target, with a stand-in `go` on PATH: a run that ends in
# "context deadline exceeded" without writing a failing input (Go's fuzz coordinator race,
# golang/go#75804) is run once more and fails nothing; a written failing input or any other failure
# fails the target. Usage: fuzz_run_test.sh SOURCE_DIR WORK_DIR
set -u
S=$1
D=$2/fuzz_run_test
rm -rf "$D" && mkdir -p "$D/bin"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat > "$D/bin/go" <<'GO'
#!/usr/bin/env bash
n=$(($(cat "$FAKE_DIR/calls" 2>/dev/null || echo 0) + 1)); echo "$n" > "$FAKE_DIR/calls"
race() { echo "--- FAIL: FuzzNode (11.05s)"; echo "    context deadline exceeded"; exit 1; }
case "$FAKE" in
  race-once) [ "$n" = 1 ] && race; echo "fuzz: elapsed: 10s, execs: 100 (10/sec)" ;;
  race) race ;;
  crash) echo "    Failing input written to testdata/fuzz/FuzzNode/abc"; echo "    context deadline exceeded"; exit 1 ;;
  panic) echo "panic: boom"; exit 2 ;;
esac
GO
chmod +x "$D/bin/go"
run() {  # run CASE: prints "RC CALLS"
  rm -f "$D/calls"
  FAKE=$1 FAKE_DIR=$D PATH="$D/bin:$PATH" FUZZ_TARGETS=go:convert:FuzzNode FUZZ_TIME=1 BUILD_FUZZ="$D/build" \
    "$S/fuzz/run.sh" > "$D/$1.out" 2>&1
  echo "$? $(cat "$D/calls")"
}
[ "$(run race-once)" = "0 2" ] || fail "race then a clean run: $(run race-once) (want rc 0 after 2 runs)"
[ "$(run race)" = "0 2" ] || fail "the race twice: $(run race) (want rc 0 after 2 runs)"
grep -q 'golang/go#75804' "$D/race.out" || fail "the race is not named: $(cat "$D/race.out")"
[ "$(run crash)" = "1 1" ] || fail "a written failing input: $(run crash) (want rc 1 after 1 run)"
[ "$(run panic)" = "1 1" ] || fail "a panic: $(run panic) (want rc 1 after 1 run)"
echo ok
