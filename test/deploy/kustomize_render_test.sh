#!/usr/bin/env bash
# deploy/: what `kubectl kustomize` renders for the base, every overlay and the path each gitops
# example syncs is what an admin's cluster gets, so check the rendered objects (no cluster needed):
#   - the RoleBinding to extension-apiserver-authentication-reader stays in kube-system (a
#     kustomization `namespace:` or Flux's targetNamespace once moved it to tidal-system, where that
#     Role does not exist: the scheduler's delegated authentication was Forbidden on a real API server);
#   - Flux's Kustomization sets no targetNamespace (it moves every namespaced object the same way);
#   - more than one replica runs with leader election on, and leaseDuration > renewDeadline + retryPeriod;
#   - every probe names a port its container declares, on a path its binary serves;
#   - every image carries a tag;
#   - an overlay that puts the engine's gRPC port on Services (tidal-slurm's way in) with several
#     replicas gives each replica its own Service and sets frontDoors: [kubernetes, slurm];
#   - an overlay's own engine.yaml is the base's but for frontDoors (they are kept in step by hand).
#   kustomize_render_test.sh [KUBECTL]     (default: build/tools/bin/kubectl, else kubectl on PATH; exit 77 without one)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KUBECTL=${1:-$ROOT/build/tools/bin/kubectl}
[ -x "$KUBECTL" ] || KUBECTL=$(command -v kubectl || true)
[ -n "$KUBECTL" ] || { echo "skip: no kubectl (make go-tools)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
paths="deploy/base $(cd "$ROOT" && ls -d deploy/overlays/*/)"
gitops=$(python3 - "$ROOT" <<'PY'
import sys, yaml
root = sys.argv[1]
app = yaml.safe_load(open(f"{root}/deploy/gitops/argocd-application.yaml"))
out = [app["spec"]["source"]["path"]]
for d in yaml.safe_load_all(open(f"{root}/deploy/gitops/flux-kustomization.yaml")):
    if d["kind"] == "Kustomization":
        if "targetNamespace" in d["spec"]:
            sys.exit("flux: spec.targetNamespace moves kube-system/tidal-scheduler-authentication-reader too")
        out.append(d["spec"]["path"].lstrip("./"))
print(" ".join(out))
PY
) || { echo "FAIL: deploy/gitops"; exit 1; }
paths="$paths $gitops"
rc=0
for p in $(echo "$paths" | tr ' ' '\n' | sed 's|/$||' | sort -u); do
  "$KUBECTL" kustomize "$ROOT/$p" >"$WORK/out.yaml" || { echo "FAIL: kubectl kustomize $p"; rc=1; continue; }
  if python3 - "$p" "$WORK/out.yaml" <<'PY'; then echo "ok: $p"; else rc=1; fi
import re, sys, yaml
name, path = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
errs = []
def dur(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", str(s))
    return float(m[1]) * {"ms": 0.001, "s": 1, "m": 60}[m[2]] if m else None
for d in docs:
    k, md = d["kind"], d["metadata"]
    if k == "RoleBinding" and d["roleRef"]["name"] == "extension-apiserver-authentication-reader" \
            and md.get("namespace") != "kube-system":
        errs.append(f"RoleBinding {md['name']} is in {md.get('namespace')}, not kube-system: "
                    "the Role extension-apiserver-authentication-reader exists only there")
sched = {}
for d in docs:
    if d["kind"] == "ConfigMap" and "scheduler-config.yaml" in d.get("data", {}):
        sched = yaml.safe_load(d["data"]["scheduler-config.yaml"])
le = sched.get("leaderElection", {})
paths = {"engine": {"/healthz", "/readyz"}, "scheduler": {"/healthz", "/readyz", "/livez"}}
for d in docs:
    if d["kind"] not in ("StatefulSet", "Deployment"):
        continue
    spec = d["spec"]
    if spec.get("replicas", 1) > 1:
        if not le.get("leaderElect"):
            errs.append(f"{d['kind']} {d['metadata']['name']}: {spec['replicas']} replicas without leader election")
        else:
            ld, rd, rp = (dur(le.get(x)) for x in ("leaseDuration", "renewDeadline", "retryPeriod"))
            if None in (ld, rd, rp) or not ld > rd + rp:
                errs.append(f"leaderElection: want leaseDuration > renewDeadline + retryPeriod, got {le}")
    for c in spec["template"]["spec"]["containers"]:
        if ":" not in c["image"].rsplit("/", 1)[-1] and "@" not in c["image"]:
            errs.append(f"container {c['name']}: image {c['image']} has no tag")
        ports = {p.get("name") for p in c.get("ports", [])} | {p["containerPort"] for p in c.get("ports", [])}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            g = c.get(probe, {}).get("httpGet")
            if not g:
                continue
            if g["port"] not in ports:
                errs.append(f"container {c['name']}: {probe} port {g['port']} is not one of its ports {sorted(map(str, ports))}")
            if c["name"] in paths and g["path"] not in paths[c["name"]]:
                errs.append(f"container {c['name']}: {probe} path {g['path']} is not served ({sorted(paths[c['name']])})")
grpc = [d for d in docs if d["kind"] == "Service" and any(pt.get("name") == "grpc" for pt in d["spec"]["ports"])]
engine_cfg = {}
for d in docs:
    if d["kind"] == "ConfigMap" and "engine.yaml" in d.get("data", {}):
        engine_cfg = yaml.safe_load(d["data"]["engine.yaml"]) or {}
for d in docs:
    replicas = d["spec"].get("replicas", 1) if d["kind"] == "StatefulSet" else 1
    if not grpc or replicas <= 1:
        continue
    # Several replicas with the gRPC port on Services: each Service one pod (tidal-slurm lists them and
    # keeps to the leader's), and the Slurm door waits for the scheduler's word (frontDoors).
    for svc in grpc:
        if "statefulset.kubernetes.io/pod-name" not in svc["spec"].get("selector", {}):
            errs.append(f"Service {svc['metadata']['name']} puts the engine's gRPC port in front of {replicas} replicas: "
                        "a connection may reach either pod; give each replica its own Service")
    pods = {svc["spec"]["selector"].get("statefulset.kubernetes.io/pod-name") for svc in grpc}
    want = {f"{d['metadata']['name']}-{i}" for i in range(replicas)}
    if pods != want:
        errs.append(f"gRPC Services select pods {sorted(map(str, pods))}, want one per replica {sorted(want)}")
    if not {"kubernetes", "slurm"} <= set(engine_cfg.get("frontDoors", [])):
        errs.append("replicas with the engine's gRPC port exposed need frontDoors: [kubernetes, slurm] in engine.yaml "
                    "(the Slurm door waits until the replica's scheduler says it leads)")
for e in errs:
    print(f"FAIL: {name}: {e}")
sys.exit(1 if errs else 0)
PY
done
for f in "$ROOT"/deploy/overlays/*/engine.yaml; do
  [ -e "$f" ] || continue
  python3 - "$ROOT/deploy/base/engine.yaml" "$f" <<'PY' || rc=1
import sys, yaml
base, over = (yaml.safe_load(open(p)) for p in sys.argv[1:3])
over.pop("frontDoors", None)
if base != over:
    keys = sorted(k for k in set(base) | set(over) if base.get(k) != over.get(k))
    sys.exit(f"FAIL: {sys.argv[2]} differs from deploy/base/engine.yaml beyond frontDoors: {keys}")
print(f"ok: {sys.argv[2]} is the base's engine.yaml plus frontDoors")
PY
done
exit $rc
