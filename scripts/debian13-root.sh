#!/usr/bin/env bash
# Makes (or reuses) a Debian 13 ("trixie") root in DIR with the compiler, CMake, Ninja,
# pybind11 and PyTorch 2.6 (python3-torch, libtorch-dev) from Debian's packages, so spmd and its
# torch module can be built and tested against torch 2.x beside the host's torch 1.13.
#
#   scripts/debian13-root.sh [DIR]            make or reuse the root (default /var/cache/spmd/debian13)
#   scripts/debian13-root.sh --run DIR CMD..  run CMD inside it as root, with /proc, /dev, /dev/shm
#                                             and /sys mounted for the run (unmounted afterwards,
#                                             also on failure or interruption) and this checkout
#                                             bound read-write at the same path
#
# Needs root and Debian's debootstrap (installed here when missing). A root is reused when its
# stamp file lists the same packages; a half-made root (interrupted debootstrap) is made anew.
# Time on a fresh machine: ~2 min for debootstrap --variant=minbase, ~2.5 min for the packages
# (2.2 GB unpacked).
set -euo pipefail

packages=(python3-torch libtorch-dev pybind11-dev python3-dev python3-venv python3-pip python3-setuptools
          python3-wheel cmake ninja-build g++ make pkg-config procps iproute2)
default_dir=/var/cache/spmd/debian13
mirror=${SPMD_DEBIAN_MIRROR:-http://deb.debian.org/debian}

die() { echo "debian13-root: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (chroot and mounts); run it as root or with sudo"

# A run killed before its cleanup (SIGKILL, a machine stopped mid-run) leaves its mounts under
# the root, and the next run would mount over them: they are lifted first, unless a process still
# runs inside the root (another run's).
unmount_stale() {
  local root p m
  root=$(realpath "$1")
  for p in /proc/[0-9]*; do
    m=$(readlink "$p/root" 2>/dev/null) || continue
    [[ $m == "$root" || $m == "$root"/* ]] && return 0
  done
  awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -ru | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
}

# Mounts the kernel file systems the tools inside need, runs the command, unmounts in reverse
# order whatever happened. This checkout is bound at the
# same path so that paths mean the same inside and outside.
run_inside() {
  local root=$1; shift
  [[ -f $root/.spmd-debootstrap-done ]] || die "$root is not a Debian root made by this script (run it without --run first)"
  local src
  src=$(cd "$(dirname "$0")/.." && pwd)
  unmount_stale "$root"
  local mounted=()
  cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
      umount -l "${mounted[i]}" 2>/dev/null || true
    done
  }
  trap cleanup EXIT INT TERM
  mount_one() {  # mount_one TARGET mount-args...
    local target=$1; shift
    mkdir -p "$target"
    mount "$@" "$target"
    mounted+=("$target")
  }
  mount_one "$root/proc" -t proc proc
  mount_one "$root/sys" --rbind /sys
  mount --make-rslave "$root/sys"
  mount_one "$root/dev" --rbind /dev
  mount --make-rslave "$root/dev"
  mount_one "$root/dev/shm" -t tmpfs -o mode=1777 shm
  mount_one "$root$src" --bind "$src"
  # The host's names (spmdrun's c10d rendezvous advertises this host by name).
  cp -f /etc/resolv.conf /etc/hosts "$root/etc/" 2>/dev/null || true
  local rc=0
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" ${CI:+CI=$CI} \
    /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$PWD" "$@" || rc=$?  # in the same folder
  cleanup
  trap - EXIT INT TERM
  return $rc
}

if [[ ${1:-} == --run ]]; then
  [[ $# -ge 3 ]] || die "usage: $0 --run DIR COMMAND [ARG...]"
  root=$2; shift 2
  run_inside "$root" "$@"
  exit $?
fi

root=${1:-$default_dir}
stamp=$root/.spmd-debian13-root
want="packages: ${packages[*]}"
if [[ -f $stamp ]] && [[ $(cat "$stamp") == "$want" ]]; then
  echo "debian13-root: reusing $root (python3-torch $(chroot "$root" dpkg-query -W -f='${Version}' python3-torch))"
  exit 0
fi

if ! command -v debootstrap >/dev/null; then
  echo "debian13-root: installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null; }
fi

start=$SECONDS
if [[ ! -x $root/usr/bin/apt-get ]] || [[ ! -f $root/.spmd-debootstrap-done ]]; then
  echo "debian13-root: debootstrap --variant=minbase trixie $root (about 2 minutes)"
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase trixie "$root" "$mirror" > "$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log" >&2; die "debootstrap failed (log: $root.debootstrap.log)"; }
  touch "$root/.spmd-debootstrap-done"
fi
echo "debian13-root: installing ${#packages[@]} packages in the root (about 2.5 minutes)"
cp -f /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
run_inside "$root" sh -c "export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null &&
  apt-get install -y -q --no-install-recommends ${packages[*]} >/var/log/spmd-apt.log 2>&1 ||
  { tail -20 /var/log/spmd-apt.log; exit 1; }; apt-get clean"
echo "$want" > "$stamp"
echo "debian13-root: $root ready in $((SECONDS - start)) s (python3-torch $(chroot "$root" dpkg-query -W -f='${Version}' python3-torch))"
