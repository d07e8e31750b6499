#!/usr/bin/env bash
# debroot.sh: a Debian root filesystem built by debootstrap, cached, with
# packages installed into it. Used by tests that need another Debian release
# or a clean image-like root (the Lambda container-image test).
#
#   scripts/debroot.sh SUITE DIR [PACKAGE...]
#
# - DIR missing: debootstrap --variant=minbase SUITE into DIR.tmp, then rename
#   it to DIR (a half-built root is never left under DIR's name).
# - DIR present: reused as is (it must have been built for SUITE: DIR/.debroot
#   says which); only the PACKAGEs not yet installed are installed, with
#   apt-get --no-install-recommends inside a chroot.
# - One build at a time per DIR (flock on DIR.lock), so parallel callers wait
#   and then reuse the result.
# Prints DIR on success. Needs root (debootstrap, chroot, mount). The mirror is
# the first URIs line of /etc/apt/sources.list.d/*.sources (deb.debian.org
# otherwise), or $DEBROOT_MIRROR. Exit status: 0 ok, 2 usage, 1 failure.
set -euo pipefail

usage() { echo "usage: $0 SUITE DIR [PACKAGE...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
SUITE=$1
DIR=$2
shift 2
case "$SUITE" in ''|*[!a-z0-9-]*) echo "debroot: bad suite name '$SUITE'" >&2; exit 2 ;; esac
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
[ "$(id -u)" = 0 ] || { echo "debroot: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "debroot: debootstrap is not installed (scripts/setup.sh installs it)" >&2; exit 1; }

mirror() {
  if [ -n "${DEBROOT_MIRROR:-}" ]; then echo "$DEBROOT_MIRROR"; return; fi
  local m
  m=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | grep -v security | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9

if [ ! -d "$DIR" ]; then
  rm -rf "$DIR.tmp"
  echo "debroot: debootstrap $SUITE into $DIR (minbase, $(mirror))" >&2
  debootstrap --variant=minbase "$SUITE" "$DIR.tmp" "$(mirror)" >"$DIR.debootstrap.log" 2>&1 || {
    echo "debroot: debootstrap failed; last lines of $DIR.debootstrap.log:" >&2
    tail -n 20 "$DIR.debootstrap.log" >&2
    exit 1
  }
  # no daemon may start inside the root while packages are installed
  printf '#!/bin/sh\nexit 101\n' >"$DIR.tmp/usr/sbin/policy-rc.d"
  chmod 0755 "$DIR.tmp/usr/sbin/policy-rc.d"
  echo "$SUITE" >"$DIR.tmp/.debroot"
  mv "$DIR.tmp" "$DIR"
fi
have=$(cat "$DIR/.debroot" 2>/dev/null || true)
[ "$have" = "$SUITE" ] || { echo "debroot: $DIR was built for '${have:-?}', not $SUITE" >&2; exit 1; }

missing=()
for p in "$@"; do
  chroot "$DIR" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "debroot: installing into $DIR: ${missing[*]}" >&2
  mounted=0
  cleanup() { [ "$mounted" = 1 ] && umount "$DIR/proc" 2>/dev/null || true; }
  trap cleanup EXIT
  if ! mountpoint -q "$DIR/proc"; then mount -t proc proc "$DIR/proc" && mounted=1; fi
  cp /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
  chroot "$DIR" env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get update -qq >/dev/null
  chroot "$DIR" env DEBIAN_FRONTEND=noninteractive LC_ALL=C \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$DIR.apt.log" 2>&1 || {
    echo "debroot: apt-get install failed; last lines of $DIR.apt.log:" >&2
    tail -n 20 "$DIR.apt.log" >&2
    exit 1
  }
  chroot "$DIR" apt-get clean
  cleanup
  trap - EXIT
fi
echo "$DIR"
