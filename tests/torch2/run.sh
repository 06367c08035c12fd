#!/bin/bash
# The torch 2.x checks: makes (or reuses) the Debian 13 root with torch 2.6
# (scripts/debian13-root.sh), then inside it installs spmd with pip into a venv and runs
# tests/torch2/inside.sh. /proc, /dev and this checkout are mounted for the run only.
# Usage: tests/torch2/run.sh [CHECK_NAME_REGEX]
#   SPMD_DEBIAN13_ROOT   the root (default /var/cache/spmd/debian13)
#   SPMD_TORCH2=0        skip (prints why; exit 0)
# Needs root (chroot, mounts); without it, or without network for a first debootstrap, the
# checks are reported as skipped with the reason.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
root=${SPMD_DEBIAN13_ROOT:-/var/cache/spmd/debian13}
if [ "${SPMD_TORCH2:-1}" = 0 ]; then echo "torch2: skipped (SPMD_TORCH2=0)"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then echo "torch2: skipped (needs root for the Debian 13 root: chroot and mounts)"; exit 0; fi
start=$SECONDS
bash "$src/scripts/debian13-root.sh" "$root" || { echo "torch2: could not make the Debian 13 root $root"; exit 1; }
echo "torch2: root ready after $((SECONDS - start)) s"
bash "$src/scripts/debian13-root.sh" --run "$root" bash "$src/tests/torch2/inside.sh" /opt/spmd-venv "$src/build-torch2" "${1:-.}"
rc=$?
echo "torch2: $((SECONDS - start)) s in all"
exit $rc
