#!/usr/bin/env bash
# Builds (or reuses) Kubernetes 1.20.2 from Debian bookworm's `kubernetes` source package:
# kube-apiserver + kube-controller-manager for the operator's L3 tests, and kubelet, kube-scheduler and
# kube-proxy (from the same tree and Go cache) for the one-node cluster test (tools/k8s/node.ts).
# Binaries are cached outside the checkout; re-running with a warm cache is a no-op.
# Recipe and the reasons for each step: shared/notes/kubernetes.md §4 and docs/kubernetes.md.
set -euo pipefail

VERSION=1.20.2
CACHE=${TASKSVC_K8S_CACHE:-/var/cache/task-service/k8s-$VERSION}
BIN=$CACHE/bin
log() { echo "[ensure-apiserver] $*"; }

need_pkgs=()
command -v go >/dev/null || need_pkgs+=(golang-go)
command -v etcd >/dev/null || need_pkgs+=(etcd-server)
command -v rsync >/dev/null || need_pkgs+=(rsync)
[ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || need_pkgs+=(golang-github-modern-go-reflect2-dev)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_pkgs[*]}"
  # The lock timeout lets this coexist with other apt users on a shared machine.
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

TARGETS=(kube-apiserver kube-controller-manager kubelet kube-scheduler kube-proxy)
all_built() { for t in "${TARGETS[@]}"; do [ -x "$BIN/$t" ] || return 1; done; }
if all_built; then
  log "cached binaries in $BIN ($("$BIN/kube-apiserver" --version 2>/dev/null || echo unknown))"
  exit 0
fi

mkdir -p "$CACHE"
# One build at a time even if CI and a developer race each other.
exec 9>"$CACHE/.lock"
flock 9
if all_built; then
  log "built concurrently by another run: $BIN"
  exit 0
fi

SRC=$CACHE/src
if ! ls "$SRC"/kubernetes_*.orig.tar.gz >/dev/null 2>&1; then
  log "downloading Debian source package 'kubernetes'"
  # the machine's own release (bookworm), through a private deb-src index
  "$(dirname "$0")/../debian-source.sh" kubernetes "$SRC"
fi

TREE=$CACHE/tree
if [ ! -f "$TREE/Makefile" ]; then
  log "unpacking source"
  rm -rf "$TREE" && mkdir -p "$TREE"
  tar -xzf "$(ls "$SRC"/kubernetes_*.orig.tar.gz | head -1)" -C "$TREE" --strip-components=1
  # The vendored reflect2 1.0.1 crashes (SIGSEGV on the first custom-resource request) under Go >= 1.18.
  rm -rf "$TREE/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$TREE/vendor/github.com/modern-go/reflect2"
fi

# kubelet 1.20 rewrites host sysctls (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops) unless
# --protect-kernel-defaults, which then refuses to start: make it only warn, so the host stays as it was.
CM=$TREE/pkg/kubelet/cm/container_manager_linux.go
grep -q 'b := KernelTunableModify' "$CM" && sed -i 's/b := KernelTunableModify/b := KernelTunableWarn/' "$CM"
grep -q 'b := KernelTunableWarn' "$CM" || { log "kubelet sysctl patch did not apply to $CM"; exit 1; }

log "building ${TARGETS[*]} (about 15 min cold on 2 cores, a few minutes on a warm Go cache)"
(cd "$TREE" && CGO_ENABLED=0 GOFLAGS= make WHAT="${TARGETS[*]/#/cmd/}")
OUT=$(find "$TREE/_output" -type f -name kube-apiserver -path '*bin*' | head -1)
mkdir -p "$BIN"
# copy then rename: a running binary (another test's API server) cannot be overwritten in place
for t in "${TARGETS[@]}"; do cp "$(dirname "$OUT")/$t" "$BIN/.$t.new" && mv -f "$BIN/.$t.new" "$BIN/$t"; done
log "done: $("$BIN/kube-apiserver" --version)"
# The tree and Go build cache are kept so a rebuild is warm; drop them with TASKSVC_K8S_PRUNE=1.
if [ "${TASKSVC_K8S_PRUNE:-0}" = 1 ]; then rm -rf "$TREE"; fi
