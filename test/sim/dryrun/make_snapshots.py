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
with open("weights.json", "w") as f:
    json.dump(snapshot([], pending, [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}], "weights-1-1"), f, indent=1)

running = [job(f"a/train-{i}", "a", start=T - 3600, runtime_s=90000, placement=[{"node": f"node-{i}", "members": 1}])
           for i in range(3)]
running.append(job("b/train-0", "b", start=T - 3600, runtime_s=90000, placement=[{"node": "node-3", "members": 1}]))
pending = [job(f"b/job-{i}", "b", submit=T - 300 + i, required_level="", preferred_level="", gpu_model="") for i in range(2)]
quotas = [{"name": "a", "weight": 1, "nominal": {"gpus": 24}, "borrowingLimit": {"gpus": 0}},
          {"name": "b", "weight": 1, "nominal": {"gpus": 8}, "borrowingLimit": {"gpus": 0}}]
with open("quota.json", "w") as f:
    json.dump(snapshot(running, pending, quotas, "quota-24-8"), f, indent=1)
