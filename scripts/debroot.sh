#!/usr/bin/env bash
# debroot.sh: a Debian root filesystem built by debootstrap, cached, with
# packages installed into it, and commands run inside it. Used by tests that
# need another Debian release (scripts/test.sh: GDAL 3.10 of trixie, 3.13 of
# sid) or a clean image-like root (the Lambda container-image test).
#
#   scripts/debroot.sh SUITE DIR [PACKAGE...]
#   scripts/debroot.sh --run DIR [--bind HOST:IN[:ro]]... [--no-shm] -- CMD [ARG...]
#
# SUITE DIR [PACKAGE...]:
# - DIR missing: debootstrap --variant=minbase SUITE into DIR.tmp, then rename
#   it to DIR (a half-built root is never left under DIR's name). With
#   DEBROOT_ARCH=arm64 the root is of that architecture, run through qemu-user
#   (binfmt_misc must run its binaries: qemu-user-static and binfmt-support).
# - DIR present: reused as is (it must have been built for SUITE: DIR/.debroot
#   says which); only the PACKAGEs not yet installed are installed, with
#   apt-get --no-install-recommends inside the root.
# - One build at a time per DIR (flock on DIR.lock), so parallel callers wait
#   and then reuse the result.
# - Prints DIR on success.
# --run DIR ... -- CMD: runs CMD as root inside DIR (chroot) with a clean
#   environment (PATH, HOME, LANG, plus CI and every VT_* variable of the caller),
#   /proc, /dev and /sys mounted (/dev/shm its own, empty), and each HOST folder bound
#   at IN (read-only with :ro). --no-shm: /dev/shm is an empty read-only tmpfs
#   instead, as on Lambda (no semaphores, no shared-cache segment can be made).
#
# Mounts are made in private mount and PID namespaces (unshare): they exist only
# for the command and vanish with it however it ends (nothing to unmount, nothing
# mounted left under DIR for an rm -rf to walk into), and no process started
# inside outlives it. The network is the host's.
#
# Needs root (debootstrap, chroot, mount). The mirror is the first URIs line of
# /etc/apt/sources.list.d/*.sources (deb.debian.org otherwise), or
# $DEBROOT_MIRROR. Exit status: 0 ok, 1 failure, 2 usage, 3 the mirror does not
# serve SUITE: a line "SKIPPED: ..." says why (the only case that is not a
# failure: a caller may go on without this root).
set -euo pipefail

usage() {
  echo "usage: $0 SUITE DIR [PACKAGE...]" >&2
  echo "       $0 --run DIR [--bind HOST:IN[:ro]]... [--no-shm] -- CMD [ARG...]" >&2
  exit 2
}
die() { echo "debroot: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mount)"

# Run "$@" inside the root $DIR, in private mount + PID namespaces. Mounts: /proc
# (of the new PID namespace), /dev and /sys (recursive binds: pts, cgroups: the
# tunerd tests read and make cgroups as on the host), a fresh tmpfs on /dev/shm (the
# root's own), then the BINDS
# ("HOST:IN" or "HOST:IN:ro"; IN is made in the root when missing).
BINDS=()
SHM_OPTS=mode=1777,nosuid,nodev
in_root() {
  local b envs v
  for b in "${BINDS[@]}"; do b=${b#*:}; mkdir -p "$DIR/${b%:ro}"; done
  envs=(HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM="${TERM:-dumb}"
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        DEBIAN_FRONTEND=noninteractive)
  for v in $(compgen -e); do
    case "$v" in CI|VT_*) envs+=("$v=${!v}") ;; esac
  done
  # unshare --fork ignores SIGTERM and SIGINT while it waits: run it in the background
  # and turn those into SIGKILL (its --kill-child then ends everything inside).
  unshare --mount --propagation private --pid --fork --kill-child -- \
    /bin/bash -euc '
      R=$1 shm=$2 n=$3
      shift 3
      mount -t proc proc "$R/proc"
      mount --rbind /dev "$R/dev"
      # a /dev/shm of its own: names made from PIDs of this PID namespace (shared-cache
      # segments, semaphores) must not meet those of the host or of another root
      mount -t tmpfs -o "$shm" shm "$R/dev/shm"
      mount --rbind /sys "$R/sys"
      while [ "$n" -gt 0 ]; do
        src=${1%%:*} dst=${1#*:} ro=${1##*:}
        shift
        n=$((n - 1))
        if [ "$ro" = ro ]; then dst=${dst%:ro}; fi
        mount --bind "$src" "$R/$dst"
        if [ "$ro" = ro ]; then mount -o remount,bind,ro "$R/$dst"; fi
      done
      exec chroot "$R" /usr/bin/env -i "$@"
    ' debroot "$DIR" "$SHM_OPTS" "${#BINDS[@]}" "${BINDS[@]}" "${envs[@]}" "$@" <&0 &
  local pid=$! rc=0
  trap 'kill -KILL "$pid" 2>/dev/null' TERM INT HUP
  while :; do
    wait "$pid" && rc=0 || rc=$?
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - TERM INT HUP
  return "$rc"
}

# ---------------------------------------------------------------- --run
if [ "${1:-}" = --run ]; then
  [ $# -ge 2 ] || usage
  DIR=$2
  shift 2
  case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
  [ -f "$DIR/.debroot" ] || die "$DIR is not a root made by $0"
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case "$1" in
      --bind)
        [ $# -ge 2 ] || usage
        [ -d "${2%%:*}" ] || die "--bind: no folder ${2%%:*}"
        BINDS+=("$2")
        shift 2 ;;
      --no-shm)
        SHM_OPTS=ro,mode=0755,size=64k,nosuid,nodev
        shift ;;
      *) usage ;;
    esac
  done
  [ "${1:-}" = -- ] && shift
  [ $# -gt 0 ] || usage
  in_root "$@"
  exit $?
fi

# ---------------------------------------------------------------- SUITE DIR [PACKAGE...]
[ $# -ge 2 ] || usage
SUITE=$1
DIR=$2
shift 2
case "$SUITE" in ''|*[!a-z0-9-]*) echo "debroot: bad suite name '$SUITE'" >&2; exit 2 ;; esac
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/setup.sh installs it)"

mirror() {
  if [ -n "${DEBROOT_MIRROR:-}" ]; then echo "$DEBROOT_MIRROR"; return; fi
  local m
  m=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | grep -v security | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR=$(mirror)
MIRROR=${MIRROR%/}

skipped() { echo "SKIPPED: Debian $SUITE: $*" >&2; exit 3; }
# A download failure (after the probe below succeeded) is the mirror failing to
# serve the suite too; anything else (a dependency problem, a failing maintainer
# script) is a real failure.
mirror_failed() {
  grep -qE "Failed to fetch|Couldn't download|Unable to fetch|Could not resolve|Temporary failure resolving|Connection timed out|Hash Sum mismatch" "$1"
}

mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9

if [ ! -d "$DIR" ]; then
  # Does the mirror serve the suite at all?
  url=$MIRROR/dists/$SUITE/InRelease
  code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 60 --retry 2 "$url" 2>&1) ||
    skipped "the mirror $MIRROR cannot be reached: $(grep -v '^000$' <<<"$code" | tr '\n' ' ')"
  [ "$code" = 200 ] || skipped "the mirror answers HTTP $code for $url"
  rm -rf --one-file-system "$DIR.tmp"
  echo "debroot: debootstrap $SUITE into $DIR (minbase, $MIRROR)" >&2
  t0=$SECONDS
  debootstrap --variant=minbase ${DEBROOT_ARCH:+--arch="$DEBROOT_ARCH"} "$SUITE" "$DIR.tmp" "$MIRROR" \
    >"$DIR.debootstrap.log" 2>&1 || {
    echo "debroot: debootstrap failed; last lines of $DIR.debootstrap.log:" >&2
    tail -n 20 "$DIR.debootstrap.log" >&2
    mirror_failed "$DIR.debootstrap.log" && skipped "debootstrap could not download from $MIRROR"
    exit 1
  }
  # no daemon may start inside the root while packages are installed
  printf '#!/bin/sh\nexit 101\n' >"$DIR.tmp/usr/sbin/policy-rc.d"
  chmod 0755 "$DIR.tmp/usr/sbin/policy-rc.d"
  echo "$SUITE" >"$DIR.tmp/.debroot"
  mv "$DIR.tmp" "$DIR"
  echo "debroot: debootstrap done in $((SECONDS - t0)) s" >&2
fi
have=$(cat "$DIR/.debroot" 2>/dev/null || true)
[ "$have" = "$SUITE" ] || die "$DIR was built for '${have:-?}', not $SUITE"

missing=()
for p in "$@"; do
  chroot "$DIR" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "debroot: installing into $DIR: ${missing[*]}" >&2
  t0=$SECONDS
  cp /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
  # The mirror may serve a suite frozen at some date (sid's Release file here is
  # past its Valid-Until): accept it. Signatures are still checked.
  printf 'Acquire::Check-Valid-Until "false";\n' >"$DIR/etc/apt/apt.conf.d/90debroot-valid-until"
  in_root sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends "$@" && apt-get clean' \
    apt "${missing[@]}" >"$DIR.apt.log" 2>&1 || {
    echo "debroot: apt-get install failed; last lines of $DIR.apt.log:" >&2
    tail -n 20 "$DIR.apt.log" >&2
    mirror_failed "$DIR.apt.log" && skipped "apt-get could not download from $MIRROR"
    exit 1
  }
  echo "debroot: installed in $((SECONDS - t0)) s" >&2
fi
echo "$DIR"
