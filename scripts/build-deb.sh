#!/usr/bin/env bash
# Builds the Debian packages (dpkg-buildpackage -b -us -uc: gstreamer1.0-gpunet,
# gstreamer1.0-gpunet-cuda, gpunet-tools, libgpunet-dev) into OUT (default
# ../gst-gpunet-debs), then installs them into a throwaway root and checks them:
# gst-inspect-1.0 finds gpunetclassify with no environment variable, gpunet-run
# classifies a photo, a C program builds against pkg-config gpunet.
#   scripts/build-deb.sh [--check-only] [OUT]
# The throwaway root is this system seen through overlay mounts in a private mount
# namespace (unshare -m; needs root): dpkg -i there changes nothing outside, and it
# all disappears when the check ends. DEB_BUILD_OPTIONS defaults to nocheck (the test
# suite is scripts/run-tests.sh); GPU_ARCHS (default 75) narrows the CUDA build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check_only=""
[ "${1:-}" = "--check-only" ] && { check_only=1; shift; }
out=$(mkdir -p "${1:-$root/../gst-gpunet-debs}" && cd "${1:-$root/../gst-gpunet-debs}" && pwd)
work="" scratch=""
trap 'rm -rf ${work:+"$work"} ${scratch:+"$scratch"}' EXIT

if [ -z "$check_only" ]; then
  for t in dpkg-buildpackage dh; do
    command -v $t >/dev/null || { echo "build-deb.sh: needs $t (apt-get install dpkg-dev debhelper)" >&2; exit 2; }
  done
  # dpkg-buildpackage writes next to the source tree: build in a copy so the
  # checkout stays clean (no debian/tmp, no obj-*), and take the .debs from there
  work=$(mktemp -d)
  mkdir "$work/gst-gpunet"
  git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && xargs -0 cp --parents -t "$work/gst-gpunet")
  echo "building the packages in $work (a few minutes)..."
  (cd "$work/gst-gpunet" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-nocheck} \
    GPU_ARCHS=${GPU_ARCHS:-75} dpkg-buildpackage -b -us -uc > "$work/build.log" 2>&1) || {
    tail -40 "$work/build.log" >&2
    echo "build-deb.sh: dpkg-buildpackage failed" >&2
    exit 1
  }
  rm -f "$out"/*.deb
  cp "$work"/*.deb "$out"/
fi
ls "$out"/*.deb >/dev/null 2>&1 || { echo "build-deb.sh: no .deb in $out" >&2; exit 1; }
echo "packages:"
for d in "$out"/*.deb; do
  echo "  $(basename "$d"): $(dpkg-deb -c "$d" | grep -vc '/$') files"
done

if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
  echo "build-deb.sh: not checked (installing into a throwaway root needs root and unshare)"
  exit 0
fi
fx="$root/tests/data/fixtures"
scratch=$(mktemp -d)
# shellcheck disable=SC2016
unshare -m bash -euo pipefail -c '
  out=$1 fx=$2 scratch=$3
  mount --make-rprivate /
  for d in /usr /etc /var/lib/dpkg /var/cache /var/log; do
    n=$(echo "$d" | tr / _)
    mkdir -p "$scratch/up$n" "$scratch/work$n"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=$scratch/up$n,workdir=$scratch/work$n" "$d"
  done
  mkdir -p "$HOME/.cache/gstreamer-1.0"
  mount -t tmpfs tmpfs "$HOME/.cache/gstreamer-1.0"
  dpkg -i "$out"/*.deb > "$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; exit 1; }
  echo "installed in the throwaway root:"
  dpkg-query -W -f "  \${Package} \${Version}\n" gstreamer1.0-gpunet gpunet-tools libgpunet-dev \
    gstreamer1.0-gpunet-cuda 2>/dev/null || true
  # no environment variable at all, as after apt install
  env -i PATH=/usr/bin:/bin HOME="$HOME" gst-inspect-1.0 gpunetclassify > "$scratch/inspect.txt"
  grep -m1 "Long-name\|Description" "$scratch/inspect.txt" | sed "s/^ */  gst-inspect-1.0: /"
  cd "$scratch"
  gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=ball ! jpegenc ! filesink location=ball.jpg
  env -i PATH=/usr/bin:/bin HOME="$HOME" gpunet-run --model "$fx/tiny-a.json" \
    --checkpoint "$fx/tiny-a/tiny-a.pth.tar" --image ball.jpg --top-k 1 | sed "s/^/  /"
  printf "#include <gpunet.h>\n#include <stdio.h>\nint main (void) { printf (\"%%s\\\\n\", gpunet_imagenet_label (281)); return 0; }\n" > t.c
  cc t.c $(pkg-config --cflags --libs --static gpunet) -o t
  echo "  a C program built with pkg-config gpunet prints: $(./t)"
' check "$out" "$fx" "$scratch"
echo "build-deb.sh: the packages install and work in a throwaway root"
