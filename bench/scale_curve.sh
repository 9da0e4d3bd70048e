#!/usr/bin/env bash
# The scale curve of one full scheduling cycle (docs/benchmarks-cycle.md, "Scale curve"): each case of
# BM_Cycle (bench/cycle_bench.cc) in its own process, so that its peak RSS is its own; prints one
# Markdown table row per case. Usage: bench/scale_curve.sh [path/to/tidal_bench] [repetitions]
set -euo pipefail
bench="${1:-build/bin/tidal_bench}"
reps="${2:-1}"
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| nodes | pending | cycle CPU (median of ${reps}x3) | wall | peak RSS | world RSS | placed / reserved / preemptions | memo hits |"
echo "|---|---|---|---|---|---|---|---|"
for nodes in 1000 10000 50000; do
  for pending in 10000 100000 1000000; do
    out=$("$bench" --benchmark_filter="^BM_Cycle/nodes:${nodes}/pending:${pending}/" \
      --benchmark_repetitions="$reps" --benchmark_format=json 2>/dev/null)
    python3 - "$nodes" "$pending" "$reps" <<EOF
import json, sys
d = json.loads('''$out''')
runs = [b for b in d["benchmarks"] if b.get("run_type") == "iteration"]
if not runs:
    print(f"| {sys.argv[1]} | {sys.argv[2]} | (no run) |"); sys.exit()
runs.sort(key=lambda b: b["cpu_time"])
m = runs[len(runs) // 2]
print(f"| {int(m['nodes']):,} | {int(m['pending']):,} | {m['cpu_time']:.0f} ms | {m['real_time']:.0f} ms | "
      f"{m['peak_rss_MiB']:.0f} MiB | {m['world_MiB']:.0f} MiB | {int(m['placed']):,} / {int(m['reserved'])} / "
      f"{int(m['preemptions_proposed'])} | {int(m['shape_cache_hits']):,} |")
EOF
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
