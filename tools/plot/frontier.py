#!/usr/bin/python3
"""The trade-off between the overall average wait and the large gangs' tail, over many policy runs.

    frontier.py OUT.png BASE.json RUN.json...

BASE.json is a `tidalctl sim --policy all --out` file: its easy-backfill row is the reference
(1.0 on both axes) and its tidal row is drawn as today's default. Every RUN.json (any `--out`
file) of the same trace (the same number of jobs as BASE's) adds one point per tidal row: x is
its overall average queueing delay over EASY's, y its 64+ GPU gangs' p99 over EASY's. The shaded
corner is issue 17 item 2's target for these two (x <= 0.5, y <= 1); filled points also meet its
other four (64+ average <= EASY's, stranded GPU-time <= EASY's, GPU allocation >= EASY's, and at
least as many multi-node jobs within one NVLink domain as BASE's tidal row, today's default).
Prints how many runs fall in the corner. Needs matplotlib (python3-matplotlib, `make deps`).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sim_report import save  # noqa: E402  (this directory: palette PNGs)


def rows(path):
    with open(path) as f:
        d = json.load(f)
    return d["input"].get("jobs"), {p["policy"]: p for p in d["policies"]}


def figures(p):
    cap = p["capacity_gpus"] * p["makespan_s"] / 3600.0
    return {
        "avg": p["queueing_delay_s"]["avg"],
        "g_avg": p["gangs_64_plus"]["queueing_delay_s"]["avg"],
        "g_p99": p["gangs_64_plus"]["queueing_delay_s"]["p99"],
        "stranded": round(100.0 * p["stranded_gpu_hours"] / cap, 2) if cap > 0 else 0.0,
        "alloc": round(100.0 * p["gpu_allocation_rate"], 2),
        "nvl": round(100.0 * p["locality"]["within_one_nvlink"], 1),
    }


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, base, runs = argv[0], argv[1], argv[2:]
    jobs, ref = rows(base)
    if "easy-backfill" not in ref:
        sys.exit(f"{base}: no easy-backfill row (run it with --policy all)")
    e = figures(ref["easy-backfill"])
    if e["avg"] <= 0 or e["g_p99"] <= 0:
        sys.exit(f"{base}: EASY's average or 64+ p99 is 0; nothing to scale by")
    nvl = figures(ref["tidal"])["nvl"] if "tidal" in ref else 0.0
    pts = []
    for r in runs:
        try:
            j, pol = rows(r)
        except (OSError, ValueError, KeyError) as err:
            print(f"skipped {r}: {err}", file=sys.stderr)
            continue
        if j != jobs or "tidal" not in pol:
            continue
        x = figures(pol["tidal"])
        rest = x["g_avg"] <= e["g_avg"] and x["stranded"] <= e["stranded"] and x["alloc"] >= e["alloc"] and x["nvl"] >= nvl
        pts.append((x["avg"] / e["avg"], x["g_p99"] / e["g_p99"], rest))
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.fill_between([0, 0.5], 0, 1, color="#2ca02c", alpha=0.15, label="target (overall <= 0.5x, 64+ p99 <= 1x)")
    for filled in (False, True):
        sel = [(a, b) for a, b, r in pts if r == filled]
        if sel:
            ax.scatter([a for a, _ in sel], [b for _, b in sel], s=14, alpha=0.7, color="#1f77b4",
                       facecolors="#1f77b4" if filled else "none",
                       label="trial runs meeting the other four targets" if filled else "trial runs")
    if "tidal" in ref:
        t = figures(ref["tidal"])
        ax.scatter([t["avg"] / e["avg"]], [t["g_p99"] / e["g_p99"]], marker="*", s=160, color="#d62728",
                   label="tidal, today's default")
    ax.scatter([1], [1], marker="D", s=60, color="#ff7f0e", label="easy-backfill")
    ax.set_xlabel("overall average queueing delay / EASY's")
    ax.set_ylabel("64+ GPU gangs' p99 queueing delay / EASY's")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"{len(pts)} runs on one trace ({jobs} jobs)", fontsize=10)
    fig.tight_layout()
    save(fig, out)
    inside = sum(1 for a, b, _ in pts if a <= 0.5 and b <= 1)
    full = sum(1 for a, b, r in pts if a <= 0.5 and b <= 1 and r)
    print(f"{out}: {len(pts)} runs; {inside} in the corner, {full} of them meeting the other four targets")


if __name__ == "__main__":
    main(sys.argv[1:])
