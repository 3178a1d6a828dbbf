#!/usr/bin/env bash
# Builds gst-gpunet from this working tree inside another Debian release and runs the fast
# suite there (scripts/run-tests.sh: the normal build, CUDA included when the host has a
# CUDA toolkit, and the sanitizer build), so a change is tried on that release's
# GStreamer and oneDNN too.  The roots:
#   trixie          Debian 13: GStreamer 1.26, oneDNN 3.7
#   bookworm-arm64  Debian 12 for 64-bit ARM (the CPU of Jetson and Grace hosts), its
#                   programs run by QEMU's user-mode emulator through the kernel's
#                   binfmt_misc (Debian's qemu-user-static): our portable paths, oneDNN's
#                   ARM kernels, no CUDA.  The root takes about 7 minutes (90 s of
#                   debootstrap, 5 of packages), the build and run-tests.sh --emulated
#                   about 13 (2026-11-28, two cores)
#
#   scripts/test-distro.sh ROOT             make the root if needed, build, test
#   scripts/test-distro.sh ROOT --prepare   only make (or bring up to date) the root
#   scripts/test-distro.sh ROOT --run CMD.. run one command in the root, from the
#                                           working tree (build-trixie/tools/gpunet-bench)
#
# The root (a debootstrap of the release from the Debian archive apt on this host uses,
# with the build dependencies of scripts/install-deps.sh) is made once and kept outside
# the clone, in $GPUNET_DISTRO_CACHE (default ${XDG_CACHE_HOME:-/var/cache}/gst-gpunet),
# as <release>-root; delete that directory to start over.  A cold root takes 1-10 minutes
# by the archive's speed (67 s here, 2026-11-28) and 2.4 GB; a warm one a few seconds;
# the build and the tests then about 70 s on two cores.  The build directories are
# build-<release> and build-<release>-asan in the working tree.
#
# Inside the root: the working tree at /src, /proc, /dev, a fresh /dev/shm, and the host's
# CUDA toolkit (read-only) at /usr/local/cuda when the host has one.  Everything mounted
# is unmounted on exit, failures and interrupts included.
#
# Prints the CPU backends built (and fails if the fast CPU path is not among them); the
# last line is run-tests.sh's "N passed, S skipped, F failed".  Exit 77 (skip), with one
# line saying why, where the release cannot be tried here: not root, no debootstrap, no
# network to the archive for a root still to be made, too little disk.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd -P)

skip () { echo "test-distro.sh: skipped: $*"; exit 77; }
die () { echo "test-distro.sh: $*" >&2; exit 1; }

usage () { echo "usage: scripts/test-distro.sh trixie|bookworm-arm64 [--prepare | --run COMMAND [ARG...]]" >&2; exit 2; }
release=${1:-}
mode=${2:-}
case "$release" in
  trixie) codename=trixie arch="" ;;
  bookworm-arm64) codename=bookworm arch=arm64 ;;
  *) usage ;;
esac
case "$mode" in
  ""|--prepare) [ $# -le 2 ] || usage ;;
  --run) [ $# -ge 3 ] || usage ;;
  *) usage ;;
esac

PATH=$PATH:/usr/sbin:/sbin   # debootstrap and chroot, where sudo's PATH lacks them
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, mount, chroot); run it with sudo"
command -v chroot >/dev/null || skip "no chroot on this host"

# A root of another architecture: its programs run through binfmt_misc and QEMU (the
# handler needs the F flag, so that it works inside the chroot: Debian registers it so).
if [ -n "$arch" ]; then
  qarch=aarch64
  handler=/proc/sys/fs/binfmt_misc/qemu-$qarch
  if ! grep -qs '^enabled' "$handler"; then
    [ -e /proc/sys/fs/binfmt_misc/register ] || \
      mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
    if ! command -v update-binfmts >/dev/null || [ ! -x /usr/bin/qemu-$qarch-static ]; then
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends qemu-user-static binfmt-support >/dev/null 2>&1 || true
    fi
    update-binfmts --enable qemu-$qarch >/dev/null 2>&1 || true
  fi
  grep -qs '^enabled' "$handler" || skip "this host cannot run $arch programs: it needs \
the kernel's binfmt_misc and Debian's qemu-user-static and binfmt-support"
fi

cache=${GPUNET_DISTRO_CACHE:-${XDG_CACHE_HOME:-/var/cache}/gst-gpunet}
root=$cache/$release-root
mkdir -p "$cache" 2>/dev/null || skip "cannot create the cache directory $cache"

# MiB free where $1 lives
free_mib () { df -Pm "$1" | awk 'NR == 2 { print $4 }'; }

# The Debian archive apt uses here: the first deb source of this host's own release
# (deb822 .sources files and one-line .list files), never a security or updates suite.
host_mirror () {
  local codename
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  python3 - "$codename" /etc/apt/sources.list /etc/apt/sources.list.d/* <<'EOF'
import sys
codename, files = sys.argv[1], sys.argv[2:]
found = []
for path in files:
    try:
        text = open(path).read()
    except OSError:
        continue
    if path.endswith(".sources"):
        for stanza in text.split("\n\n"):
            f = {}
            for line in stanza.splitlines():
                if line.strip().startswith("#") or ":" not in line:
                    continue
                k, v = line.split(":", 1)
                f[k.strip().lower()] = v.split()
            if "deb" in f.get("types", []) and f.get("enabled", ["yes"])[0] != "no":
                for suite in f.get("suites", []):
                    for uri in f.get("uris", []):
                        found.append((uri, suite))
    elif path.endswith(".list"):
        for line in text.splitlines():
            w = line.split("#", 1)[0].split()
            if len(w) >= 3 and w[0] == "deb":
                w = [x for x in w[1:] if not x.startswith("[") and not x.endswith("]")
                     and "=" not in x]
                if len(w) >= 2:
                    found.append((w[0], w[1]))
for uri, suite in found:
    if suite == codename:
        print(uri.rstrip("/"))
        break
EOF
}

mounts=()
cleanup () {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || \
      echo "test-distro.sh: could not unmount ${mounts[i]}" >&2
  done
  mounts=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# mount_in ROOT SOURCE TARGET [OPTIONS...]: bind SOURCE at ROOT/TARGET, remembered for cleanup
bind_in () {
  local r=$1 from=$2 to=$1$3; shift 3
  mkdir -p "$to"
  mount --bind "$from" "$to"
  mounts+=("$to")
  # nothing mounted below it may reach the host's own tree
  mount --make-rslave "$to"
  if [ "${1:-}" = ro ]; then mount -o remount,bind,ro "$to"; fi
}

mount_system () {
  local r=$1
  mkdir -p "$r/proc"
  mount -t proc proc "$r/proc"
  mounts+=("$r/proc")
  bind_in "$r" /dev /dev
  bind_in "$r" /dev/pts /dev/pts
  mkdir -p "$r/dev/shm"
  mount -t tmpfs -o mode=1777,size=1g tmpfs "$r/dev/shm"
  mounts+=("$r/dev/shm")
  cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
}

in_root () {
  chroot "$1" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/cuda/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    "${@:2}"
}

# Only one run makes or uses a root at a time (two clones share the cache).
exec 9>"$cache/$release.lock"
flock 9

# What the root holds beyond install-deps.sh: g++ for nvcc's host side.  The stamp names
# the package set; a changed install-deps.sh brings the root up to date on the next run.
extra_pkgs="g++ ca-certificates"
want_stamp=$(cat scripts/install-deps.sh <(echo "$extra_pkgs") | sha256sum | cut -c1-16)
stamp=$root/etc/gst-gpunet-root

t0=$(date +%s)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want_stamp" ]; then
  command -v debootstrap >/dev/null || \
    skip "no debootstrap to make the $release root (apt-get install debootstrap)"
  mirror=$(host_mirror)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  python3 - "$mirror/dists/$codename/Release" 2>/dev/null <<'EOF' || \
    skip "no network to the Debian archive ($mirror)"
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=30).read(1)
EOF
  if [ ! -f "$root/etc/debian_version" ]; then
    need=4000
    [ "$(free_mib "$cache")" -ge $need ] || \
      skip "the disk under $cache has $(free_mib "$cache") MiB free, a $release root needs $need"
    echo "test-distro.sh: making the $release root in $root from $mirror (a few minutes)"
    rm -rf "$root.partial"
    if ! debootstrap ${arch:+--arch=$arch} --variant=minbase \
        --include=ca-certificates,pkg-config \
        "$codename" "$root.partial" "$mirror" > "$cache/$release-debootstrap.log" 2>&1; then
      [ "$(free_mib "$cache")" -ge 200 ] || skip "the disk under $cache is full"
      tail -n 5 "$cache/$release-debootstrap.log" >&2
      die "debootstrap failed (log: $cache/$release-debootstrap.log)"
    fi
    mv "$root.partial" "$root"
  fi
  echo "test-distro.sh: installing the build dependencies in the $release root"
  mount_system "$root"
  bind_in "$root" "$src" /src ro
  if ! in_root "$root" sh -c "cd /src && scripts/install-deps.sh && \
      apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $extra_pkgs && \
      apt-get clean" > "$cache/$release-install.log" 2>&1; then
    [ "$(free_mib "$cache")" -ge 200 ] || skip "the disk under $cache is full"
    tail -n 5 "$cache/$release-install.log" >&2
    die "installing the build dependencies in the $release root failed (log: $cache/$release-install.log)"
  fi
  cleanup
  echo "$want_stamp" > "$stamp"
  echo "test-distro.sh: the $release root is ready ($(($(date +%s) - t0)) s)"
fi
[ "$mode" = --prepare ] && exit 0

mount_system "$root"
bind_in "$root" "$src" /src
cuda=$(readlink -f /usr/local/cuda 2>/dev/null || true)
if [ -z "$arch" ] && [ -n "$cuda" ] && [ -x "$cuda/bin/nvcc" ]; then
  bind_in "$root" "$cuda" /usr/local/cuda ro
fi
# NVIDIA's DeepStream wheel for the NVMM tests (tests/gst/nvds-libs.sh): the host's
# cache, so that the root needs neither pip nor PyPI to run them
wheels=${GPUNET_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gst-gpunet/wheels}
if [ -d "$wheels" ]; then
  bind_in "$root" "$wheels" /root/.cache/gst-gpunet/wheels
fi

if [ "$mode" = --run ]; then
  shift 2
  set +e
  in_root "$root" sh -c 'cd /src && exec "$@"' sh "$@"
  status=$?
  set -e
  exit $status
fi

[ "$(free_mib "$src")" -ge 1500 ] || \
  skip "the disk under the working tree has $(free_mib "$src") MiB free, the builds need 1500"

t1=$(date +%s)
set +e
# on an emulated CPU: run-tests.sh --emulated (no sanitizer build, no CUDA arithmetic)
in_root "$root" sh -c "cd /src && BUILD_DIR=build-$release ASAN_BUILD_DIR=build-$release-asan \
  scripts/run-tests.sh ${arch:+--emulated}" 2>&1 | tee "$cache/$release-last.log"
status=${PIPESTATUS[0]}
set -e
t2=$(date +%s)

# run-tests.sh's line "CPU backends built: ..." names the fast path when it was built; its
# absence is one more failure in the last line
missing_fast=0
if ! grep -q '^CPU backends built: .*oneDNN' "$cache/$release-last.log"; then
  echo "test-distro.sh: $release: the fast CPU path (oneDNN) was not built"
  missing_fast=1
  status=1
fi
echo "test-distro.sh: $release: $((t2 - t1)) s in the root, $((t2 - t0)) s in all"
# the last line: run-tests.sh's count (one failure where it printed none)
count=$(grep -E '^[0-9]+ passed, [0-9]+ skipped, [0-9]+ failed' "$cache/$release-last.log" | tail -n 1)
if [ -z "$count" ]; then
  count="0 passed, 0 skipped, 0 failed"
  [ $status -ne 0 ] || status=1
  missing_fast=$((missing_fast + 1))
fi
read -r p _ sk _ f _ <<< "$count"
echo "$p passed, $sk skipped, $((f + missing_fast)) failed"
exit $status
