#!/usr/bin/env bash
# Usage: disk_space.sh BUILD_DIR ASAN_BUILD_DIR TSAN_BUILD_DIR
# Before make test: is there room for what it writes? Its builds (the build folder ~2.6 GB, the
# ASan and TSan folders ~2.3 GB together), torch 2.6's Debian 13 root (~1.8 GB under
# /var/cache/spmd, made once) and the compiler's temporary files in /tmp. Folders that exist
# already count as made. Fails (exit 1) with what is missing when there is surely too little;
# says so and goes on when it is tight.
set -u
gib() { awk -v k="$1" 'BEGIN { printf "%.1f GB", k / 1048576 }'; }
free_kib() { df -Pk "$1" 2>/dev/null | awk 'NR == 2 { print $4 }'; }
here=$(pwd)
need=$((1024 * 1024))  # the compiler's temporaries and the suite's own files
# MiB each folder takes when made (a fresh clone, 2026-11-30): the build, ASan's, TSan's.
dirs=("$@")
sizes_mib=(2700 1600 700)
for i in "${!dirs[@]}"; do
  [[ -d ${dirs[i]} ]] || need=$((need + ${sizes_mib[i]:-1200} * 1024))
done
root=${SPMD_DEBIAN13_ROOT:-/var/cache/spmd/debian13}
[[ -e $root/.spmd-debootstrap-done ]] || need=$((need + 2500 * 1024))
have=$(free_kib "$here")
tmp_have=$(free_kib /tmp)
[[ -n $have && -n $tmp_have ]] || exit 0  # df cannot say: nothing to check against
if ((tmp_have < 512 * 1024)); then
  echo "disk_space: /tmp has $(gib "$tmp_have") free; the compiler writes its temporary files there. Free some space (old /tmp/spmd* entries of killed runs can go) and run make test again." >&2
  exit 1
fi
if ((have < need / 2)); then
  echo "disk_space: $(gib "$have") free on the filesystem of $here, where make test needs about $(gib "$need") (builds, torch 2.6's Debian root). Free some space (old build folders, clones) and run it again." >&2
  exit 1
fi
if ((have < need)); then
  echo "disk_space: warning: $(gib "$have") free on the filesystem of $here; make test may need about $(gib "$need")" >&2
fi
exit 0
