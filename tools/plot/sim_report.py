#!/usr/bin/python3
"""Plots for `tidalctl sim --report DIR`, drawn from DIR/metrics.json (written by sim/report.cc).

    sim_report.py METRICS_JSON OUT_DIR

Writes into OUT_DIR:
  queueing_delay_cdf.png  CDF of job queueing delay, one line per policy (log time axis)
  gpu_allocation.png      allocated GPUs / capacity over time (6 h moving average), one line per
                          policy (kube-default's partly placed gangs also drawn alone, dashed)
  queue_shares.png        GPUs allocated per queue (stacked, fraction of capacity) over time,
                          one panel per policy
  pools.png               with two pools (--slurm-trace): each door's allocated GPUs and the GPUs
                          lent between the pools over time, one panel per policy
Needs matplotlib (Debian: python3-matplotlib, installed by `make deps`). No other dependency.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DAY = 86400.0
COLORS = {"fifo": "#d62728", "easy-backfill": "#ff7f0e", "kube-default": "#9467bd", "tidal": "#1f77b4"}


def color(name):
    return COLORS.get(name)


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


def cdf(policies, out):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for p in policies:
        q = p.get("queueing_delay_quantiles") or []
        if not q:
            continue
        ys = [i / (len(q) - 1) for i in range(len(q))]
        # Delays of 0 s cannot sit on a log axis: draw them at 1 s (the axis starts there).
        xs = [max(1.0, v) for v in q]
        ax.step(xs, ys, where="post", label=p["policy"], color=color(p["policy"]), linewidth=1.6)
    ax.set_xscale("log")
    ax.set_xlim(left=1)
    ax.set_ylim(0, 1.0)
    ticks = [1, 60, 600, 3600, 6 * 3600, DAY, 7 * DAY]
    ax.set_xticks(ticks)
    ax.set_xticklabels(["<=1s", "1m", "10m", "1h", "6h", "1d", "7d"])
    ax.set_xlabel("queueing delay (submit to start)")
    ax.set_ylabel("fraction of completed jobs")
    ax.set_title("Queueing delay CDF")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    save(fig, out)


def smooth(values, window):
    """Centred moving average over `window` samples (the series is sampled at a fixed period)."""
    if window <= 1 or len(values) < window:
        return values
    half = window // 2
    out = []
    acc = sum(values[:half])
    count = half
    for i in range(len(values)):
        if i + half < len(values):
            acc += values[i + half]
            count += 1
        if i - half - 1 >= 0:
            acc -= values[i - half - 1]
            count -= 1
        out.append(acc / count)
    return out


def allocation(policies, out, hours=6.0):
    fig, ax = plt.subplots(figsize=(9, 4.2))
    window = 1
    for p in policies:
        s = p.get("series") or {}
        t = s.get("t") or []
        if not t:
            continue
        cap = float(p.get("capacity_gpus") or 1)
        days = [(x - t[0]) / DAY for x in t]
        period = (t[1] - t[0]) if len(t) > 1 else 1
        window = max(1, int(round(hours * 3600 / period)) | 1)
        alloc = smooth([(a + h) / cap for a, h in zip(s["allocated"], s["held"])], window)
        ax.plot(days, alloc, label=p["policy"], color=color(p["policy"]), linewidth=1.0, alpha=0.85)
        if any(s["held"]):
            ax.plot(days, smooth([h / cap for h in s["held"]], window), label=p["policy"] + " (partial gangs)",
                    color=color(p["policy"]), linewidth=1.0, linestyle="--", alpha=0.85)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("days since the first submission")
    ax.set_ylabel("allocated GPUs / capacity")
    ax.set_title("GPU allocation over time (%g h moving average)" % hours if window > 1 else "GPU allocation over time")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    save(fig, out)


def shares(policies, out, top=6):
    ps = [p for p in policies if (p.get("series") or {}).get("t")]
    if not ps:
        return
    fig, axes = plt.subplots(len(ps), 1, figsize=(9, 2.2 * len(ps) + 0.8), sharex=True, squeeze=False)
    # The same queues (the largest by GPU-hours in the first policy) and colours in every panel.
    ranked = sorted(ps[0]["per_queue"].items(), key=lambda kv: -kv[1].get("gpu_hours", 0))
    shown = [name for name, _ in ranked[:top]]
    for ax, p in zip(axes[:, 0], ps):
        s = p["series"]
        t = s["t"]
        cap = float(p.get("capacity_gpus") or 1)
        days = [(x - t[0]) / DAY for x in t]
        names = s["queues"]
        layers, labels = [], []
        for name in shown:
            if name in names:
                layers.append([v / cap for v in s["per_queue"][names.index(name)]])
                labels.append(name)
        rest = [0.0] * len(t)
        for i, name in enumerate(names):
            if name not in shown:
                rest = [r + v / cap for r, v in zip(rest, s["per_queue"][i])]
        layers.append(rest)
        labels.append("other")
        ax.stackplot(days, layers, labels=labels, linewidth=0)
        ax.set_ylim(0, 1)
        ax.set_ylabel(p["policy"], fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_title("GPUs allocated per queue (fraction of capacity) over time")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    axes[-1, 0].set_xlabel("days since the first submission")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, out)


def pools(policies, out, hours=1.0):
    ps = [p for p in policies if (p.get("series") or {}).get("doors")]
    if not ps:
        return
    fig, axes = plt.subplots(len(ps), 1, figsize=(9, 2.4 * len(ps) + 0.8), sharex=True, squeeze=False)
    for ax, p in zip(axes[:, 0], ps):
        s = p["series"]
        t = s["t"]
        days = [(x - t[0]) / DAY for x in t]
        period = (t[1] - t[0]) if len(t) > 1 else 1
        window = max(1, int(round(hours * 3600 / period)) | 1)
        sizes = {x["pool"]: x["gpus"] for x in p["pools"]["pools"]}
        for door, c in (("kubernetes", "#1f77b4"), ("slurm", "#2ca02c")):
            ax.plot(days, smooth(s["doors"][door], window), color=c, linewidth=1.0, label=door + " door's GPUs")
            ax.axhline(sizes.get(door, 0), color=c, linewidth=0.8, linestyle=":", alpha=0.8)
        ax.plot(days, smooth(s["lent"], window), color="#d62728", linewidth=1.0, linestyle="--", label="GPUs lent")
        ax.set_ylabel(p["policy"], fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_title("GPUs by door (dotted: each pool's size) and GPUs lent, %g h moving average" % hours)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    axes[-1, 0].set_xlabel("days since the first submission")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, out)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        doc = json.load(f)
    policies = doc.get("policies") or []
    out = argv[2].rstrip("/")
    cdf(policies, out + "/queueing_delay_cdf.png")
    allocation(policies, out + "/gpu_allocation.png")
    shares(policies, out + "/queue_shares.png")
    pools(policies, out + "/pools.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
