#!/usr/bin/env python3
"""deploy/config/tidal.schema.json against the engine's own config parser (tidalctl config validate).

For every field the schema describes, configs at its edges (each bound and one past it, each enum
value and a wrong one, the wrong JSON type, an unknown key beside it) are judged by the schema
(jsonschema) and by `tidalctl config validate`; a field the schema accepts and the engine refuses, or
the other way round, is a mismatch: an editor with the schema would pass a file the engine refuses at
start and on reload, or flag one it runs. Every config of deploy/ must pass both.
Mismatches the schema cannot express (checks across fields) are listed in CROSS_FIELD with the reason.

  schema_cases.py ROOT TIDALCTL     exit 0: they agree; 1: mismatches (printed); 77: no jsonschema
"""
import copy, json, os, re, subprocess, sys, tempfile

try:
    import jsonschema
except ImportError:
    print("skip: python3-jsonschema missing")
    sys.exit(77)
import yaml

ROOT, TIDALCTL = sys.argv[1], sys.argv[2]
BASE_PLUGINS = yaml.safe_load(open(os.path.join(ROOT, "deploy/base/engine.yaml")))["profile"]["plugins"]
SCHEMA = json.load(open(os.path.join(ROOT, "deploy/config/tidal.schema.json")))
DEFS = SCHEMA.get("$defs", {})
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

# The schema cannot say these (they depend on other fields); the engine's refusal is right.
CROSS_FIELD = {
    "queues.[].formerNames.[]: string 'a'": "a former name may not be the queue's own name",
}
# Where the engine is more lenient than the schema (the schema flags a file the engine runs):
# (label suffix, engine's result) -> why.
LENIENT = {
    ": a number": "the engine reads a number where a string is expected as its text",
}
# Where the engine refuses a value the schema cannot refuse without a regex lookahead (not every
# validator has one): label suffix -> why.
VALUE_CHECKS = {
    ": string '0s'": "a duration must be positive (0s, 0m, ...)",
}

# Strings every field with a pattern is tried with (durations, quantities, names).
PATTERN_PROBES = ["90", "90s", "1h30m", "1d2h3m4s", "30m30m", "5s1h", "1.5h", "2d", "0s", "100Mi", "1.2.3", "1e3",
                  "0.5", ".", "1Ei", "a", "team-a", "-a", "A"]

# Values that make a sample object valid when the schema requires the key.
SAMPLE = {"health": "unhealthy", "name": "a", "start": "2030-01-01T00:00:00Z", "queues": ["a"],
          "horizonSeconds": 60}


def resolve(n, key=None):
    """n without its $ref; with key, the oneOf/anyOf alternative that has that property."""
    while "$ref" in n:
        n = DEFS[n["$ref"].split("/")[-1]]
    if key is not None:
        for alt in n.get("oneOf", []) + n.get("anyOf", []):
            alt = resolve(alt)
            if key in alt.get("properties", {}):
                return alt
    return n


def sample(n):
    """A value the schema accepts for node n (None when there is no obvious one)."""
    n = resolve(n)
    for kw in ("oneOf", "anyOf"):
        if kw in n:
            return sample(n[kw][0])
    if "enum" in n:
        return n["enum"][0]
    t = n.get("type")
    if isinstance(t, list):
        t = t[0]
    if t == "object":
        return {k: sample(n["properties"][k]) if k not in SAMPLE else SAMPLE[k]
                for k in n.get("required", [])}
    if t == "array":
        return []
    if t == "integer":
        return max(n.get("minimum", 1), 1)
    if t == "number":
        return 1
    if t == "boolean":
        return True
    if t == "string":
        return "a"
    return None


def edges(n):
    """(label, value) pairs at the edges of a leaf node."""
    n = resolve(n)
    out = []
    t = n.get("type")
    if "enum" in n:
        out += [(f"enum {v!r}", v) for v in n["enum"]] + [("enum 'bogus'", "bogus")]
    if t in ("integer", "number"):
        for b in ("minimum", "maximum"):
            if b in n:
                v = n[b]
                out += [(f"{b} {v}", v), (f"past {b} {v}", v - 1 if b == "minimum" else v + 1)]
        if "exclusiveMinimum" in n:
            out += [("at exclusiveMinimum", n["exclusiveMinimum"])]
        out += [("a string", "1")]
        if t == "integer":
            out += [("a fraction", 1.5)]
    if t == "boolean":
        out += [("true", True), ("false", False), ("a string", "yes")]
    if t == "string" and "enum" not in n and "pattern" not in n:
        out += [("a number", 5)]
    if t == "string" and "pattern" in n:  # durations, quantities, names: the pattern's edges
        out += [(f"string {v!r}", v) for v in PATTERN_PROBES]
    return out


def map_key(n, path):
    """A key a map (additionalProperties) node accepts: its propertyNames' first enum value, gpus for
    a resource list, a pool's name."""
    names = n.get("propertyNames", {})
    if "enum" in names:
        return names["enum"][0]
    for k in ("cpu", "gpus"):  # a resource list: one not taken by patternProperties
        if "pattern" in names and re.fullmatch(names["pattern"], k) and \
                not any(re.search(pat, k) for pat in n.get("patternProperties", {})):
            return k
    return "gpupool" if path[-1:] == ["pools"] else "x"


def cases():
    """(path, doc) pairs: every leaf's edges, and an unknown key in every closed object."""
    out = []

    def put(path, value):
        doc = {}
        node, cur = SCHEMA, doc
        for i, key in enumerate(path):
            node = resolve(node, key)
            last = i == len(path) - 1
            if key == "[]":
                node = node["items"]
                v = value if last else {}
                cur.append(v)
                cur = v
                continue
            pats = [sub for pat, sub in node.get("patternProperties", {}).items() if re.search(pat, key)]
            if key in node.get("properties", {}):
                child = node["properties"][key]
            elif pats:
                child = pats[0]
            else:  # a map's value: additionalProperties
                child = node["additionalProperties"]
            base = sample(node) if isinstance(sample(node), dict) else {}
            for k, v in base.items():
                cur.setdefault(k, v)
            c = resolve(child, None if last else path[i + 1])
            nxt = value if last else ([] if c.get("type") == "array" else {})
            cur[key] = nxt
            if not last and isinstance(nxt, dict):
                sc = sample(c)
                for k, v in (sc if isinstance(sc, dict) else {}).items():
                    nxt.setdefault(k, v)
            cur = nxt
            node = child
        # What the schema leaves to other fields, filled in so that one field is tested at a time:
        if path[0] == "pools":  # a named pool's owners must be configured queues
            doc["queues"] = [{"name": "a"}]
        if path[0] == "profile" and isinstance(doc["profile"], dict):
            if path[:2] == ["profile", "plugins"] and path[2:3] == ["[]"]:  # the others beside the one tested
                doc["profile"]["plugins"][:0] = [p for p in BASE_PLUGINS if p in ("fairshare", "quota", "gang")]
            doc["profile"].setdefault("plugins", list(BASE_PLUGINS))  # exactly one QueueSort plugin
            for pl in doc["profile"]["plugins"]:
                if isinstance(pl, dict) and pl.get("name") == "a":
                    pl["name"] = "topology"
        if path[:3] == ["queues", "[]", "lendingLimit"] and isinstance(doc["queues"][0].get("lendingLimit"), dict):
            doc["queues"][0]["nominal"] = {k: "1P" for k in doc["queues"][0]["lendingLimit"]}  # lends of a quota
        if path[:3] == ["nodeHealth", "rules", "[]"] and isinstance(doc["nodeHealth"]["rules"][0], dict):
            rule = doc["nodeHealth"]["rules"][0]
            if "condition" not in rule and "label" not in rule:  # exactly one of condition, label
                rule["condition"] = "Ready"
        if path[:2] == ["perishable", "runtimeCorrection"] and isinstance(doc["perishable"]["runtimeCorrection"], dict):
            rc = doc["perishable"]["runtimeCorrection"]  # minSamples at most the window
            if path[-1] == "minSamples" and isinstance(rc.get("minSamples"), int):
                rc["window"] = 10000
            if path[-1] == "window" and isinstance(rc.get("window"), int):
                rc["minSamples"] = 1
        return doc

    def walk(n, path, depth=0):
        if depth > 8:
            return
        n = resolve(n)
        for kw in ("oneOf", "anyOf"):
            for alt in n.get(kw, []):
                walk(alt, path, depth + 1)
        props = n.get("properties", {})
        for k, v in props.items():
            walk(v, path + [k], depth + 1)
        for pat, sub in n.get("patternProperties", {}).items():
            walk(sub, path + ["gpus" if re.search(pat, "gpus") else "x"], depth + 1)
        ap = n.get("additionalProperties")
        if isinstance(ap, dict) and not props:
            walk(ap, path + [map_key(n, path)], depth + 1)
        elif isinstance(ap, dict) and path[-1:] == ["pools"]:
            walk(ap, path + ["gpupool"], depth + 1)
        if "items" in n:
            walk(n["items"], path + ["[]"], depth + 1)
        if n.get("type") == "object" and ap is False and path:
            v = copy.deepcopy(sample(n) or {})
            v["bogusKey"] = 1
            out.append((".".join(path) + ": unknown key", put(path, v)))
        for label, val in edges(n):
            if path:
                out.append((".".join(path) + ": " + label, put(path, val)))

    walk(SCHEMA, [])
    return out


def engine_ok(doc, work):
    p = os.path.join(work, "engine.yaml")
    with open(p, "w") as f:
        json.dump(doc, f)
    r = subprocess.run([TIDALCTL, "config", "validate", p], capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip().replace(p, "engine.yaml")


def main():
    bad = []
    with tempfile.TemporaryDirectory() as work:
        for f in ("deploy/config/tidal.yaml", "deploy/base/engine.yaml"):
            doc = yaml.safe_load(open(os.path.join(ROOT, f)))
            errs = [e.message for e in VALIDATOR.iter_errors(doc)]
            ok, msg = engine_ok(doc, work)
            if errs or not ok:
                bad.append(f"{f}: schema {errs or 'ok'}, engine {msg}")
        n = 0
        for label, doc in cases():
            n += 1
            schema_ok = VALIDATOR.is_valid(doc)
            ok, msg = engine_ok(doc, work)
            if schema_ok == ok or label in CROSS_FIELD:
                continue
            if ok and any(label.endswith(k) for k in LENIENT):
                continue
            if not ok and any(label.endswith(k) for k in VALUE_CHECKS) and "must be positive" in msg:
                continue
            bad.append(f"{label}: schema {'accepts' if schema_ok else 'refuses'}, engine "
                       f"{'accepts' if ok else 'refuses'} {json.dumps(doc)}" + ("" if ok else f": {msg.splitlines()[-1]}"))
    for b in bad:
        print("MISMATCH:", b)
    print(f"{n} configs at the schema's edges: {len(bad)} mismatch(es)")
    return 1 if bad else 0


sys.exit(main())
