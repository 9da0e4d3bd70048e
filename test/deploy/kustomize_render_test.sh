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
#   - an overlay that puts the engine's gRPC port on a Service (tidal-slurm's way in) runs one replica.
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
grpc = [pt for d in docs if d["kind"] == "Service" for pt in d["spec"]["ports"] if pt.get("name") == "grpc"]
for d in docs:
    if grpc and d["kind"] == "StatefulSet" and d["spec"].get("replicas", 1) > 1:
        errs.append(f"the engine's gRPC port is on a Service in front of {d['spec']['replicas']} replicas: "
                    "tidal-slurm could hold its door on the standby's engine")
for e in errs:
    print(f"FAIL: {name}: {e}")
sys.exit(1 if errs else 0)
PY
done
exit $rc
