#!/bin/sh
# tools/plot/frontier.py on real `tidalctl sim --out` files: a small llm-gangs trace under every
# policy (the reference) and under two more tidal profiles; the plot is written, every run of the
# same trace is a point, a run of another trace is left out, and a reference without an
# easy-backfill row is refused by name.
# usage: frontier_test.sh BUILD_DIR
set -eu
B=$1
T=$B/bin/tidalctl
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$B/frontier_test
rm -rf "$D" && mkdir -p "$D"
"$T" gen llm-gangs --gpus 512 --days 1 -o "$D/a.csv" 2>/dev/null
"$T" gen llm-gangs --gpus 512 --days 1 --seed 2 -o "$D/other.csv" 2>/dev/null
"$T" sim --trace "$D/a.csv" --gpus 512 --policy all --out "$D/all.json" >/dev/null 2>&1
for d in 1 4; do
  printf 'profile:\n  plugins: [fairshare, quota, gang, {name: topology, weight: 1}, preemption]\n  backfill: {depth: %s}\n' $d >"$D/d$d.yaml"
  "$T" sim --trace "$D/a.csv" --gpus 512 --policy tidal --config "$D/d$d.yaml" --out "$D/d$d.json" >/dev/null 2>&1
done
"$T" sim --trace "$D/other.csv" --gpus 512 --policy tidal --out "$D/other.json" >/dev/null 2>&1
out=$(/usr/bin/python3 "$ROOT/tools/plot/frontier.py" "$D/f.png" "$D/all.json" "$D/all.json" "$D/d1.json" "$D/d4.json" "$D/other.json")
echo "$out"
echo "$out" | grep -q "f.png: 3 runs;" || { echo "FAIL: want 3 runs of the trace (the other trace left out)"; exit 1; }
[ -s "$D/f.png" ] || { echo "FAIL: no plot written"; exit 1; }
if /usr/bin/python3 "$ROOT/tools/plot/frontier.py" "$D/g.png" "$D/d1.json" "$D/d4.json" 2>"$D/err"; then
  echo "FAIL: a reference without easy-backfill was accepted"; exit 1
fi
grep -q "no easy-backfill row" "$D/err" || { echo "FAIL: the refusal does not say why"; cat "$D/err"; exit 1; }
echo PASS
