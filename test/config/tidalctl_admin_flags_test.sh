#!/usr/bin/env bash
# tidalctl's admin commands refuse bad flags before they ask the engine, naming the flag and what
# it accepts (exit 2): explain and queues with an -o they do not print (before, any -o other than
# json printed text or a table and exited 0), drain with a --by it cannot read (the message lists
# every accepted form: now, +DURATION, RFC 3339, unix seconds). No engine runs: the address is a
# closed port, so a command that got past its flags would fail differently (exit 1).
#   tidalctl_admin_flags_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: tidalctl_admin_flags_test.sh BUILD_DIR}
CTL=$BUILD/bin/tidalctl
fail() { echo "FAIL: $*"; exit 1; }
run() { set +e; "$CTL" "$@" >/tmp/tidalctl-flags.$$ 2>&1; local rc=$?; set -e; OUT=$(cat /tmp/tidalctl-flags.$$); rm -f /tmp/tidalctl-flags.$$; return $rc; }
expect() {  # expect RC PATTERN ARGS...
  local want=$1 pattern=$2 rc=0; shift 2
  run "$@" || rc=$?
  [ "$rc" = "$want" ] || fail "tidalctl $*: exit $rc, want $want: $OUT"
  grep -qF -- "$pattern" <<<"$OUT" || fail "tidalctl $*: no '$pattern' in: $OUT"
}

expect 2 'tidalctl explain: -o: unknown format "yaml" (accepted: text, json)' explain team/x -o yaml --engine http://127.0.0.1:1
expect 2 'tidalctl queues: -o: unknown format "yaml" (accepted: table, json)' queues --output yaml --engine http://127.0.0.1:1
# The formats they print still get as far as the engine (unreachable here: exit 1).
expect 1 'cannot reach tidal-engine' explain team/x -o json --engine http://127.0.0.1:1
expect 1 'cannot reach tidal-engine' queues -o table --engine http://127.0.0.1:1
for by in garbage -5m 1e5; do
  expect 2 "--by: invalid value \"$by\" (accepted: now, +DURATION such as +30m or +2h, an RFC 3339 time" \
    drain gpu-07 --by "$by" --engine 127.0.0.1:1
done
expect 2 '--by: invalid duration' drain gpu-07 --by +soon --engine 127.0.0.1:1
echo PASS
