#!/usr/bin/env bash
# The Kubernetes manifests of deploy/, offline (there is no cluster here): `kubectl kustomize
# deploy/` renders them, deploy/make-secrets.sh makes the key Secrets (kubectl --dry-run=client),
# check_deploy.py checks the objects and every flag against the real binary's --help, and
# pod_lifecycle.py runs deploy/ember-pod.sh's join and preStop drain against real processes on
# loopback. Exits 77 (skipped) without kubectl or python3's yaml module.
#
# usage: deploy_test.sh EMBER_BINARY
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EMBER="$(realpath "${1:-$ROOT/build/ember}")"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed (kubernetes-client)"; exit 77; }
python3 -c "import yaml" 2>/dev/null || { echo "SKIP: python3 has no yaml module (python3-yaml)"; exit 77; }

SCRATCH="$(mktemp -d /tmp/ember-deploy-test.XXXXXX)"
trap 'rm -rf "$SCRATCH"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

kubectl version --client 2>/dev/null | head -n 1
# kubectl 1.20's kustomize (v2) and today's render the same manifests.
kubectl kustomize "$ROOT/deploy" >"$SCRATCH/rendered.yaml" 2>"$SCRATCH/kustomize.err" ||
  { cat "$SCRATCH/kustomize.err"; fail "kubectl kustomize deploy/ failed"; }
EMBER="$EMBER" "$ROOT/deploy/make-secrets.sh" "$SCRATCH/keys" >"$SCRATCH/secrets.yaml" \
  2>"$SCRATCH/secrets.err" || { cat "$SCRATCH/secrets.err"; fail "deploy/make-secrets.sh failed"; }
python3 "$ROOT/tests/launch/check_deploy.py" "$SCRATCH/rendered.yaml" "$SCRATCH/secrets.yaml" \
  "$EMBER" "$ROOT/deploy/ember-pod.sh" || fail "the manifests have problems (above)"
timeout 300 python3 "$ROOT/tests/launch/pod_lifecycle.py" "$EMBER" "$ROOT/deploy/ember-pod.sh" ||
  fail "ember-pod.sh's join and drain"
echo "PASS"
