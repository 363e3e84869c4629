#!/usr/bin/env bash
# Downloads a Debian source package (its .dsc, orig and debian tarballs) into DEST, without unpacking it.
#   tools/debian-source.sh PACKAGE DEST [SUITE...]
# Uses a private deb-src index derived from the machine's own apt sources, so the system's apt config and
# lists are untouched. Without SUITE: the machine's own suites (its release). With SUITEs: those suites of
# the machine's main archive (e.g. a newer release's, for a package the machine's release does not have);
# apt takes the highest version found. Used by tools/k8s/ensure-apiserver.sh and tools/backup/ensure-pg-dump.sh.
set -euo pipefail

PKG=${1:?usage: debian-source.sh PACKAGE DEST [SUITE...]}
DEST=${2:?usage: debian-source.sh PACKAGE DEST [SUITE...]}
shift 2
SUITES=("$@")

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/lists/partial" "$DEST"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  if [ ${#SUITES[@]} -eq 0 ]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$W/src.sources"
  else
    # the first stanza is the main archive (the others are security and the like)
    URI=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$URI" "${SUITES[*]}" "$KEYRING" >"$W/src.sources"
  fi
  LIST=$W/src.sources
else
  if [ ${#SUITES[@]} -eq 0 ]; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$W/src.list"
  else
    URI=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
    for s in "${SUITES[@]}"; do echo "deb-src [signed-by=$KEYRING] $URI $s main"; done >"$W/src.list"
  fi
  LIST=$W/src.list
fi
O=(-o "Dir::Etc::SourceList=$LIST" -o "Dir::Etc::SourceParts=$W/none" -o "Dir::State::Lists=$W/lists" -o "APT::Sandbox::User=root")
apt-get "${O[@]}" update -qq
(cd "$DEST" && apt-get "${O[@]}" source --download-only "$PKG" >/dev/null 2>&1) || {
  echo "[debian-source] no source package '$PKG' in ${SUITES[*]:-the suites of this machine}" >&2
  exit 1
}
