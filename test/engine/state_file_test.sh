#!/usr/bin/env bash
# tidal-engine's --state-file with the real binary (ctest engine_state_file): a file cut short refuses
# the start (exit 1, naming the file) and is left as it was; SIGTERM exits 0 with the file saved
# whole (with its version) and no temporary beside it; a temporary left by a process killed while
# writing is removed at the next start; a save that fails is a warning (counted in
# tidal_state_file_saves_total) and leaves the last complete file. Before, the file cut short was a
# warning, and the shutdown replaced it with a file of zeros.
set -u
ENGINE=${1:?usage: state_file_test.sh TIDAL_ENGINE}
dir=$(mktemp -d /tmp/tidal-state-sh-XXXXXX)
pid=
cleanup() { [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }
printf 'queues:\n  - name: qa\n    weight: 1\n' >"$dir/q.yaml"
start() {  # the engine on a unix socket and an ephemeral HTTP port
  "$ENGINE" --listen "unix://$dir/e.sock" --http-addr 127.0.0.1:0 --config "$dir/q.yaml" \
    --state-file "$dir/ledger.json" --decision-log none >"$dir/$1.log" 2>&1 &
  pid=$!
}

# 1. Cut short: refused, untouched.
printf '{"time": 1700000000, "usage": {"qa": {"gpus": 36' >"$dir/ledger.json"
cp "$dir/ledger.json" "$dir/orig"
start cut
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the engine started on a state file cut short"
wait "$pid"; rc=$?; pid=
[[ $rc == 1 ]] || fail "exit $rc on a state file cut short, want 1"
grep -q -- "--state-file $dir/ledger.json: not JSON" "$dir/cut.log" || fail "the refusal does not name the file"
cmp -s "$dir/ledger.json" "$dir/orig" || fail "the state file was changed"

# 2. A good file and a temporary left by a killed process; SIGTERM saves and exits 0.
printf '{"time": %s, "usage": {"qa": {"gpus": 3600}}}' "$(date +%s)" >"$dir/ledger.json"
host=$(hostname)
echo '{"time"' >"$dir/ledger.json.tmp.$host.999999999"
start good
for _ in $(seq 100); do grep -q "serving gRPC" "$dir/good.log" && break; sleep 0.1; done
grep -q "serving gRPC" "$dir/good.log" || fail "the engine did not start on a good file"
[[ -e "$dir/ledger.json.tmp.$host.999999999" ]] && fail "the killed process's temporary is still there"
kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
[[ $rc == 0 ]] || fail "exit $rc after SIGTERM, want 0"
grep -q "state file $dir/ledger.json saved" "$dir/good.log" || fail "no save at shutdown"
python3 - "$dir/ledger.json" <<'PY' || fail "the saved file"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["version"] == 1, j
assert j["usage"]["qa"]["gpus"] > 0, j
PY
left=$(ls "$dir" | grep -c '\.tmp\.' || true)
[[ $left == 0 ]] || fail "temporaries left: $(ls "$dir")"

# 3. A save that fails (here the engine's temporary cannot be created) is counted for
#    TidalStateFileNotSaved, warns naming the file, and leaves the last complete file in place.
cp "$dir/ledger.json" "$dir/orig"
start broken
for _ in $(seq 100); do grep -q "serving gRPC" "$dir/broken.log" && break; sleep 0.1; done
port=$(sed -n 's/.*HTTP on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/broken.log" | head -n 1)
[[ -n $port ]] || fail "no HTTP port in the log"
curl -sf "127.0.0.1:$port/metrics" | grep -q '^tidal_state_file_saves_total{result="failure"} 0$' \
  || fail "tidal_state_file_saves_total{result=\"failure\"} is not served at 0"
mkdir "$dir/ledger.json.tmp.$host.$pid"
kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
[[ $rc == 0 ]] || fail "exit $rc after SIGTERM with a failing save, want 0"
grep -q "cannot write state file $dir/ledger.json" "$dir/broken.log" || fail "the failed save is not a warning naming the file"
grep -q "state file $dir/ledger.json saved" "$dir/broken.log" && fail "the failed save was reported saved"
cmp -s "$dir/ledger.json" "$dir/orig" || fail "the last complete file was changed"
echo PASS
