#!/usr/bin/env bash
# Makes the CurveZMQ keys of an ember cluster on Kubernetes and prints them as Secrets:
#
#   deploy/make-secrets.sh [KEY_DIR] | kubectl apply -f -
#
#   ember-keyring        scheduler.pub server.pub trainer.pub admin.pub: the keys the cluster
#                        trusts (security.keyring in deploy/job.yaml), mounted in every pod
#   ember-key-ROLE       ROLE.key, the key pair of the scheduler, the servers, the trainers, and
#                        the admin (mounted in the servers for their preStop drain; use it with
#                        `ember status`, `ember drain` and `ember checkpoint` from outside)
#
# One key per role: every server shares the server key, every trainer the trainer key (a
# StatefulSet or Job gives all its pods the same volumes). The key files stay in KEY_DIR (default:
# a new folder ember-keys-XXXX here; keep admin.key for the tools, or delete the folder). Needs
# `ember` (or $EMBER) and kubectl; talks to no cluster.
set -euo pipefail

EMBER="${EMBER:-ember}"
KEY_DIR="${1:-$(mktemp -d ember-keys-XXXX)}"
roles=(scheduler server trainer admin)
"$EMBER" keygen --out "$KEY_DIR" "${roles[@]}" >&2

pubs=()
for role in "${roles[@]}"; do pubs+=("--from-file=$KEY_DIR/$role.pub"); done
kubectl create secret generic ember-keyring "${pubs[@]}" --dry-run=client -o yaml
for role in "${roles[@]}"; do
  echo "---"
  kubectl create secret generic "ember-key-$role" "--from-file=$KEY_DIR/$role.key" \
    --dry-run=client -o yaml
done
echo "ember: key files in $KEY_DIR" >&2
