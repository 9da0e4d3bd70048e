#!/usr/bin/env bash
# deploy/gitops: the Argo CD Application and the Flux GitRepository + Kustomization name the fields
# their controllers need and a path of this repository that kustomize renders (kubectl kustomize,
# with the e2e kubectl when built), with the engine ConfigMap under its hashed name; config-ci.sh
# passes a valid config and refuses an invalid one (exit 2); the example config and the installed
# one run the same scheduling profile.
#   gitops_examples_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: gitops_examples_test.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
paths=$(python3 - "$ROOT" <<'PY'
import os, sys, yaml
root = sys.argv[1]
def need(doc, path):
    v = doc
    for k in path.split("."):
        if not isinstance(v, dict) or k not in v:
            sys.exit(f"{doc.get('kind')}: missing {path}")
        v = v[k]
    return v
app = yaml.safe_load(open(f"{root}/deploy/gitops/argocd-application.yaml"))
assert app["apiVersion"] == "argoproj.io/v1alpha1" and app["kind"] == "Application", "argocd: kind"
for p in ["spec.source.repoURL", "spec.source.targetRevision", "spec.destination.server", "spec.destination.namespace",
          "spec.syncPolicy.automated.prune"]:
    need(app, p)
paths = [need(app, "spec.source.path")]
flux = list(yaml.safe_load_all(open(f"{root}/deploy/gitops/flux-kustomization.yaml")))
kinds = {(d["apiVersion"], d["kind"]): d for d in flux}
repo = kinds[("source.toolkit.fluxcd.io/v1", "GitRepository")]
ks = kinds[("kustomize.toolkit.fluxcd.io/v1", "Kustomization")]
need(repo, "spec.url"); need(repo, "spec.interval")
assert need(ks, "spec.sourceRef.name") == repo["metadata"]["name"], "flux: sourceRef names the GitRepository"
assert need(ks, "spec.prune") is True, "flux: prune"
paths.append(need(ks, "spec.path"))
for p in paths:
    if not os.path.isfile(os.path.join(root, p, "kustomization.yaml")):
        sys.exit(f"{p}: no kustomization.yaml in this repository")
print("\n".join(sorted(set(p.lstrip("./") for p in paths))))
PY
) || fail "manifests: $paths"
KUBECTL=$BUILD/tools/bin/kubectl
[ -x "$KUBECTL" ] || KUBECTL=$ROOT/build/tools/bin/kubectl
for p in $paths; do
  if [ -x "$KUBECTL" ]; then
    "$KUBECTL" kustomize "$ROOT/$p" >"$WORK/out.yaml" || fail "kubectl kustomize $p"
    grep -Eq 'name: tidal-engine-config-[a-z0-9]{10}$' "$WORK/out.yaml" || fail "$p: the engine ConfigMap has no hashed name"
    echo "ok: $p renders ($(grep -c '^kind:' "$WORK/out.yaml") objects)"
  else
    echo "note: $KUBECTL not built (make go-tools): $p checked by path only"
  fi
done
CI=$ROOT/deploy/gitops/config-ci.sh
TIDALCTL=$BUILD/bin/tidalctl "$CI" "$ROOT/deploy/config/tidal.yaml" >"$WORK/ci.out" 2>&1 || fail "config-ci.sh on a valid config: $(cat "$WORK/ci.out")"
printf 'queues:\n  - {name: a, weight: -1}\n' >"$WORK/bad.yaml"
set +e
TIDALCTL=$BUILD/bin/tidalctl "$CI" "$WORK/bad.yaml" >"$WORK/ci.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "config-ci.sh on an invalid config: exit $rc, want 2: $(cat "$WORK/ci.out")"
grep -q "weight" "$WORK/ci.out" || fail "config-ci.sh does not name the bad field: $(cat "$WORK/ci.out")"
# The example config (deploy/config/tidal.yaml: make demo, the docs) runs the same scheduling profile
# as the one kustomize installs (deploy/base/engine.yaml): a plugin missing from one (it once lacked
# preemption, so the demo's queues never got borrowed quota back) is a difference users do not expect.
python3 - "$ROOT" <<'PY' || fail "deploy/config/tidal.yaml and deploy/base/engine.yaml run different profiles"
import sys, yaml
root = sys.argv[1]
example = yaml.safe_load(open(f"{root}/deploy/config/tidal.yaml"))["profile"]
base = yaml.safe_load(open(f"{root}/deploy/base/engine.yaml"))["profile"]
if example != base:
    sys.exit(f"profile: deploy/config/tidal.yaml {example} != deploy/base/engine.yaml {base}")
PY
echo "gitops examples: ok"
