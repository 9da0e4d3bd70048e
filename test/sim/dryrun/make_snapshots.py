#!/usr/bin/env python3
"""Writes the crafted snapshots of the policy dry-run tests (test/unit/sim_dryrun_test.cc,
test/sim/dryrun_test.sh): run it here after changing it; the JSON files are committed.

  weights.json  4 nodes x 8 GPUs, nothing running, queues a and b each with 60 pending 4-GPU jobs of
                20-50 min (too small to hold reservations: each completion is a fresh fair-share
                choice): under weights 1:1 each holds 16 GPUs, under 3:1 (weights_new.yaml) a holds
                24 once the first jobs have ended.
  quota.json    queue a runs 3 non-preemptible 8-GPU jobs (24 GPUs, a day left), b runs one and
                waits with two more: the current quota (a 24, b 8) preempts nothing; quota_cut.yaml
                (a 8, b 24) lets b reclaim 16 GPUs from a.
"""
import json

T = 1_800_000_000  # the snapshot's time (engine clock)


def node(i):
    return {"name": f"node-{i}", "labels": {"topology.tidal.dev/rack": "rack-0"},
            "capacity": {"gpus": 8, "cpu_milli": 64000, "memory_bytes": 512 << 30},
            "gpu_model": "h100", "health": "ready", "pool": "shared", "named_pool": ""}


def job(id_, queue, **kw):
    j = {"id": id_, "queue": queue, "door": "kubernetes", "members": 1, "min_members": 1,
         "per_member": {"gpus": 8, "cpu_milli": 0, "memory_bytes": 0}, "priority": 0,
         "preemptible": False, "checkpoint_on_notice": False, "checkpoint_interval_s": 0,
         "class": "training", "runtime_s": 3600}
    j.update(kw)
    return j


def write(path, doc):
    """One line per top-level field and per list entry: small diffs, greppable."""
    with open(path, "w") as f:
        f.write("{\n")
        items = list(doc.items())
        for i, (k, v) in enumerate(items):
            if isinstance(v, list) and v:
                f.write(f" {json.dumps(k)}: [\n" + ",\n".join("  " + json.dumps(x) for x in v) + "\n ]")
            else:
                f.write(f" {json.dumps(k)}: {json.dumps(v)}")
            f.write(",\n" if i + 1 < len(items) else "\n")
        f.write("}\n")


def snapshot(running, pending, queues, version):
    return {"format": "tidal.dev/snapshot", "version": 1, "taken_at": T, "epoch": "test",
            "topology": [{"name": "rack", "label": "topology.tidal.dev/rack"}],
            "nodes": [node(i) for i in range(4)], "running": running, "pending": pending,
            "usage": {"time": T, "usage": {}}, "reservations": [],
            "config": {"version": version, "document": {"topology": {"levels": [{"name": "rack", "label": "topology.tidal.dev/rack"}]},
                                                        "queues": queues}}}


pending = []
for i in range(60):
    for q in ("a", "b"):
        pending.append(job(f"{q}/job-{i}", q, submit=T - 600 + i * 2 + (q == "b"), runtime_s=1200 + (i * 523 + (q == "b") * 311) % 1800,
                           per_member={"gpus": 4, "cpu_milli": 0, "memory_bytes": 0},
                           required_level="", preferred_level="", gpu_model=""))
write("weights.json", snapshot([], pending, [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}], "weights-1-1"))

running = [job(f"a/train-{i}", "a", start=T - 3600, runtime_s=90000, placement=[{"node": f"node-{i}", "members": 1}])
           for i in range(3)]
running.append(job("b/train-0", "b", start=T - 3600, runtime_s=90000, placement=[{"node": "node-3", "members": 1}]))
pending = [job(f"b/job-{i}", "b", submit=T - 300 + i, required_level="", preferred_level="", gpu_model="") for i in range(2)]
quotas = [{"name": "a", "weight": 1, "nominal": {"gpus": 24}, "borrowingLimit": {"gpus": 0}},
          {"name": "b", "weight": 1, "nominal": {"gpus": 8}, "borrowingLimit": {"gpus": 0}}]
write("quota.json", snapshot(running, pending, quotas, "quota-24-8"))

# sample.json (docs/simulator.md, docs/benchmarks.md): 64 nodes of 8 GPUs (block > leaf > nvlink, 4 nodes
# per NVLink domain), three queues: llm runs a 128-GPU gang and two 32-GPU jobs and waits with a
# reserved 64-GPU gang; vision runs 8-GPU jobs and waits with more; batch fills the rest with
# preemptible 8-GPU jobs (borrowing). sample_current.yaml is what runs; sample_new.yaml cuts
# vision's quota to 64 GPUs and raises llm's weight: the PR a dry-run should review.
import random

rng = random.Random(7)
LEVELS = [{"name": "block", "label": "topology.tidal.dev/block"}, {"name": "leaf", "label": "topology.tidal.dev/leaf"},
          {"name": "nvlink", "label": "topology.tidal.dev/nvlink"}]


def fabric_node(i):
    n = node(i)
    n["labels"] = {"topology.tidal.dev/block": f"block-{i // 32}", "topology.tidal.dev/leaf": f"leaf-{i // 16}",
                   "topology.tidal.dev/nvlink": f"nvlink-{i // 4}"}
    return n


free = list(range(64))
running = []


def place(id_, queue, nodes, **kw):
    at = [free.pop(0) for _ in range(nodes)]
    running.append(job(id_, queue, members=nodes, min_members=nodes,
                       placement=[{"node": f"node-{i}", "members": 1} for i in at], **kw))


place("llm/pretrain-70b", "llm", 16, start=T - 10 * 3600, runtime_s=48 * 3600, checkpoint_interval_s=1800)
place("llm/sft-a", "llm", 4, start=T - 3 * 3600, runtime_s=8 * 3600)
place("llm/sft-b", "llm", 4, start=T - 1 * 3600, runtime_s=6 * 3600)
for i in range(16):
    place(f"vision/train-{i}", "vision", 1, start=T - rng.randrange(600, 6 * 3600), runtime_s=rng.choice([4, 6, 8, 12]) * 3600,
          **{"class": "training"})
for i in range(24):
    place(f"batch/sweep-{i}", "batch", 1, start=T - rng.randrange(60, 3 * 3600), runtime_s=rng.choice([2, 3, 4]) * 3600,
          preemptible=True, checkpoint_on_notice=True, **{"class": "batch"})
pending = [job("llm/pretrain-13b", "llm", members=8, min_members=8, submit=T - 1800, runtime_s=12 * 3600,
               required_level="leaf", preferred_level="", gpu_model="")]
for i in range(24):
    pending.append(job(f"vision/train-{16 + i}", "vision", submit=T - rng.randrange(60, 3600), runtime_s=rng.choice([2, 4, 6]) * 3600,
                       required_level="", preferred_level="", gpu_model=""))
for i in range(40):
    pending.append(job(f"batch/sweep-{24 + i}", "batch", submit=T - rng.randrange(60, 7200), runtime_s=rng.choice([1, 2, 3]) * 3600,
                       preemptible=True, checkpoint_on_notice=True, required_level="", preferred_level="", gpu_model="",
                       **{"class": "batch"}))
sample_queues = [{"name": "llm", "weight": 2, "nominal": {"gpus": 256}, "borrowingLimit": {"gpus": 128}},
                 {"name": "vision", "weight": 1, "nominal": {"gpus": 128}, "borrowingLimit": {"gpus": 128}},
                 {"name": "batch", "weight": 1, "nominal": {"gpus": 128}, "borrowingLimit": {"gpus": 256}}]
sample = snapshot(running, pending, sample_queues, "sample-current")
sample["topology"] = LEVELS
sample["nodes"] = [fabric_node(i) for i in range(64)]
sample["config"]["document"]["topology"] = {"levels": LEVELS}
sample["usage"] = {"time": T, "usage": {"llm": {"gpus": 8.0e7, "cpu": 0, "memory": 0}, "vision": {"gpus": 2.5e7, "cpu": 0, "memory": 0},
                                        "batch": {"gpus": 3.0e7, "cpu": 0, "memory": 0}}}
sample["reservations"] = [{"id": "llm/pretrain-13b", "start": T + 3 * 3600, "hold": False,
                           "placement": [{"node": f"node-{i}", "members": 1} for i in range(16, 24)]}]
write("sample.json", sample)
