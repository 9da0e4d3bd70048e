#!/usr/bin/env python3
"""The table and checks of docs/benchmarks-large-jobs.md from `tidalctl sim --policy all --out` files.

  tools/plot/mixes_table.py NAME=FILE.json [NAME=FILE.json ...] [--gen NAME=GEN.txt ...]

One row per policy and file: queueing delay avg / p99 of all jobs and of the gangs of 64+ GPUs,
stranded GPU-time, GPU allocation, Jain's index, multi-node jobs within one NVLink domain / leaf;
then issue 17 item 2's checks, tidal against easy-backfill. GEN.txt is `tidalctl gen`'s report
(stderr), for the offered load. Pure reader: no state, no threads.
"""
import json
import re
import sys


def dur(s):
    if s < 120:
        return f"{s:.0f} s"
    if s < 100 * 60:
        return f"{s / 60:.1f} min"
    if s < 48 * 3600:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def pct(x):
    return f"{100 * x:.1f}%"


def main(argv):
    files, gens = [], {}
    args = iter(argv)
    for a in args:
        if a == "--gen":
            name, path = next(args).split("=", 1)
            m = re.search(r"offered load ([0-9.]+)%", open(path).read())
            gens[name] = m.group(1) + "%" if m else "?"
        else:
            files.append(a.split("=", 1))
    print("| mix | offered | policy | all jobs | 64+ gangs | stranded | alloc | Jain | in one NVLink domain / leaf |")
    print("|---|---|---|---|---|---|---|---|---|")
    checks = []
    for name, path in files:
        pols = {p["policy"]: p for p in json.load(open(path))["policies"]}
        for pname, p in pols.items():
            q, g, loc = p["queueing_delay_s"], p["gangs_64_plus"]["queueing_delay_s"], p["locality"]
            print(f"| {name} | {gens.get(name, '?')} | {pname} | {dur(q['avg'])} / {dur(q['p99'])} | "
                  f"{dur(g['avg'])} / {dur(g['p99'])} | {pct(p['fragmentation'])} | {pct(p['gpu_allocation_rate'])} | "
                  f"{p['jain_index']:.3f} | {pct(loc['within_one_nvlink'])} / {pct(loc['within_one_leaf'])} |")
        t, e = pols["tidal"], pols["easy-backfill"]
        tg, eg = t["gangs_64_plus"]["queueing_delay_s"], e["gangs_64_plus"]["queueing_delay_s"]
        ratio = t["queueing_delay_s"]["avg"] / e["queueing_delay_s"]["avg"]
        yes = lambda ok: "yes" if ok else "NO"
        checks.append(f"- {name} at {gens.get(name, '?')} ({t['gangs_64_plus']['jobs']} 64+ gangs): "
                      f"64+ avg <= EASY: {yes(tg['avg'] <= eg['avg'])}; 64+ p99 <= EASY: {yes(tg['p99'] <= eg['p99'])}; "
                      f"overall avg {ratio:.2f}x EASY <= 0.5x: {yes(ratio <= 0.5)}; "
                      f"stranded <= EASY: {yes(t['fragmentation'] <= e['fragmentation'])}; "
                      f"alloc >= EASY: {yes(t['gpu_allocation_rate'] >= e['gpu_allocation_rate'])}")
    print()
    print("\n".join(checks))


if __name__ == "__main__":
    main(sys.argv[1:])
