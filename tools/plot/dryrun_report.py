#!/usr/bin/python3
"""Plots for `tidalctl sim --snapshot ... --plots DIR`, drawn from DIR/dryrun.json (the policy
dry-run's report with both runs' time series: sim/dryrun_report.cc).

    dryrun_report.py DRYRUN_JSON OUT_DIR

Writes into OUT_DIR:
  dryrun_queues.png  GPUs each queue holds over the horizon: the current config dashed, the new
                     one solid, one colour per queue
  dryrun_ttst.png    time to start per queue (average and p99), current vs new
  dryrun_starts.png  each pending gang's start (or reservation) under the current config against
                     the new one; above the diagonal = later under the new config; reserved gangs
                     drawn as squares
Needs matplotlib (Debian: python3-matplotlib, installed by `make deps`). No other dependency.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HOUR = 3600.0


def save(fig, out):
    """PNG with a 256-colour palette when Pillow is there (plots have few colours: ~4x smaller)."""
    try:
        import io

        from PIL import Image

        buf = io.BytesIO()
        fig.savefig(buf, dpi=100, format="png")
        buf.seek(0)
        Image.open(buf).convert("RGB").quantize(colors=256).save(out, optimize=True)
    except ImportError:
        fig.savefig(out, dpi=100)
    plt.close(fig)


def title(r):
    s = r["snapshot"]
    return "%d nodes, %d GPUs; %d running, %d pending; horizon %.0f h" % (
        s["nodes"], s["gpus"], s["running"], s["pending"], r["horizon_s"] / HOUR)


def queues(r, out):
    fig, ax = plt.subplots(figsize=(8, 4.4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = sorted(set(r["current"]["series"]["queues"]) | set(r["new"]["series"]["queues"]))
    for side, style in (("current", "--"), ("new", "-")):
        s = r[side]["series"]
        t = [x / HOUR for x in s["t"]]
        for q, row in zip(s["queues"], s["per_queue"]):
            c = colors[names.index(q) % len(colors)]
            ax.step(t, row, where="post", linestyle=style, color=c, linewidth=1.6,
                    label="%s (%s)" % (q, side))
    ax.set_xlabel("hours after the snapshot")
    ax.set_ylabel("GPUs held")
    ax.set_ylim(bottom=0)
    ax.set_title("GPUs per queue: current (dashed) vs new (solid)\n" + title(r), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=2, loc="best")
    fig.tight_layout()
    save(fig, out)


def ttst(r, out):
    names = sorted(r["queues"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=False)
    width = 0.38
    for ax, key, label in ((axes[0], "avg_s", "average"), (axes[1], "p99_s", "p99")):
        xs = range(len(names))
        cur = [r["queues"][q]["current"].get("ttst", {}).get(key, 0) / HOUR for q in names]
        new = [r["queues"][q]["new"].get("ttst", {}).get(key, 0) / HOUR for q in names]
        ax.bar([x - width / 2 for x in xs], cur, width, label="current", color="#999999")
        ax.bar([x + width / 2 for x in xs], new, width, label="new", color="#1f77b4")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=20)
        ax.set_ylabel("hours")
        ax.set_title("time to start, " + label)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend()
    fig.suptitle(title(r), fontsize=10)
    fig.tight_layout()
    save(fig, out)


def starts(r, out):
    h = r["horizon_s"] / HOUR
    fig, ax = plt.subplots(figsize=(5.2, 5))
    cur, new = r["current"]["gangs"], r["new"]["gangs"]
    for reserved, marker in ((False, "o"), (True, "s")):
        xs, ys = [], []
        for gid, a in cur.items():
            b = new.get(gid)
            if b is None or a.get("reserved_in_snapshot", False) != reserved:
                continue
            xs.append(h if a["start_s"] is None else a["start_s"] / HOUR)
            ys.append(h if b["start_s"] is None else b["start_s"] / HOUR)
        if xs:
            ax.scatter(xs, ys, marker=marker, s=18 if not reserved else 40, alpha=0.7,
                       label="reserved in the snapshot" if reserved else "pending gang")
    ax.plot([0, h], [0, h], color="#666666", linewidth=1)
    ax.set_xlim(0, h * 1.02)
    ax.set_ylim(0, h * 1.02)
    ax.set_xlabel("start under the current config (h)")
    ax.set_ylabel("start under the new config (h)")
    ax.set_title("Pending gangs' start (horizon = not within it)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save(fig, out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    r = json.load(open(sys.argv[1]))
    out = sys.argv[2].rstrip("/")
    queues(r, out + "/dryrun_queues.png")
    ttst(r, out + "/dryrun_ttst.png")
    starts(r, out + "/dryrun_starts.png")


if __name__ == "__main__":
    main()
