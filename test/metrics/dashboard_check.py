#!/usr/bin/env python3
"""Checks deploy/grafana/tidal-dashboard.json against a real Prometheus that scrapes two engines
in the same state (deploy/base's leader and standby: both sync every pod), for
prometheus_e2e_test.sh:

  dashboard_check.py DASHBOARD RULES PROM_URL NAMES_FILE EXPECT_JSON

- every metric a panel reads is one the engine or tidal-slurm exports (NAMES_FILE: their live
  /metrics) or a recording rule of RULES;
- every panel query evaluates without error (variables at "All", $__rate_interval = 1m);
- no query returns two series with the same legend (one per replica: the panel shows each twice);
- the values EXPECT_JSON names ([{"panel", "legend", "value"}]) are what the panel shows: the
  cluster's GPUs, members, nodes and queue usage counted once, not once per replica ("value":
  null: the panel must not show that legend).
Exit 1 with every problem found.
"""
import json
import re
import sys
import urllib.parse
import urllib.request

dashboard, rules, prom, names_file, expect_file = sys.argv[1:6]
problems = []

exported = set()
for line in open(names_file):
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)", line)
    if m and not line.startswith("#"):
        exported.add(m.group(1))
recorded = set(re.findall(r"^\s*- record: (\S+)", open(rules).read(), re.M))


def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))


def substitute(expr):
    for var in ("queue", "pool", "resource"):
        expr = expr.replace("$" + var, ".*")
    return expr.replace("$__rate_interval", "1m")


def query(expr):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        body = json.load(e)
    if body.get("status") != "success":
        raise ValueError(body.get("error", "unknown error"))
    return body["data"]["result"]


def legend(fmt, labels):
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt or "")


shown = {}  # (panel title, legend) -> value
for p in panels(json.load(open(dashboard))["panels"]):
    for t in p.get("targets", []):
        expr = t.get("expr")
        if not expr:
            continue
        stripped = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"", "", expr)
        for name in re.findall(r"\btidal[_:][a-zA-Z0-9_:]*", stripped):
            if name not in exported and name not in recorded:
                problems.append(f"panel {p['title']!r}: {name} is neither exported nor recorded ({expr})")
        try:
            result = query(substitute(expr))
        except ValueError as e:
            problems.append(f"panel {p['title']!r}: query fails: {e} ({expr})")
            continue
        seen = {}
        for s in result:
            key = legend(t.get("legendFormat"), s["metric"])
            if key in seen:
                problems.append(f"panel {p['title']!r}: two series shown as {key!r} ({seen[key]} and "
                                f"{s['metric']}): one per replica? ({expr})")
            seen[key] = s["metric"]
            shown[(p["title"], key)] = float(s["value"][1])

for e in json.load(open(expect_file)):
    got = shown.get((e["panel"], e["legend"]))
    if e["value"] is None:
        if got is not None:
            problems.append(f"panel {e['panel']!r} shows {e['legend']!r} = {got}, want no such series")
    elif got is None or abs(got - e["value"]) > 1e-9:
        problems.append(f"panel {e['panel']!r} shows {e['legend']!r} = {got}, want {e['value']}")

for p in problems:
    print("FAIL: " + p)
print(f"dashboard: {len(shown)} series checked, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
