#!/usr/bin/env bash
# gpu-bundle.sh: packs what scripts/gpu-check.sh needs on a GPU host that has the NVIDIA
# driver, the CUDA toolkit and cuDNN (a CUDA container, a cloud image with PyTorch) but no
# GStreamer, no network and no way to install either: a copy of the build and of this
# machine's GStreamer runtime, so that a short GPU lease spends its minutes measuring.
#
# Usage: scripts/gpu-bundle.sh [BUILD_DIR [BUNDLE_DIR]]   (defaults: build-gpu, gpu-bundle)
#   On the GPU host, from the project's root (the same checkout, BUNDLE_DIR beside it):
#     BUNDLE_DIR/run.sh scripts/gpu-check.sh --profile short BUNDLE_DIR/build LOGS
#   run.sh unpacks the bundle once into ${GPU_BUNDLE_TMP:-/tmp/gpu-bundle}, sets the
#   library, plug-in and wheel-cache paths, and runs its arguments.
#
# The bundle holds:
#   build.tar.xz     the programs gpu-check.sh runs (each $TOOLS/NAME it names: the
#                    tools, the op harness) and the build's shared objects (plug-in,
#                    kernel modules), at their places: meson's relative run paths
#                    still resolve.  Not the rest (gpunet-cameras alone would add 12
#                    libraries): the full check's meson-test step needs the whole build
#   runtime.tar.xz   gst-launch-1.0, gst-inspect-1.0, the plug-in scanner, the GStreamer
#                    plug-ins gpu-check's pipelines use (PLUGINS below, each one that this
#                    machine has) and every library they and the build need, except
#                    the C library, the driver's and the CUDA toolkit's (the GPU host
#                    has its own: they must match its driver); NPP's libnppc, libnppig
#                    and libnppidei from the PyPI wheel nvidia-npp (the DeepStream wheel's
#                    nvv4l2decoder needs them; a PyTorch image has no NPP)
#   deepstream.tar.xz  the DeepStream wheel, unpacked as tests/gst/nvds-libs.sh keeps it
#                    (element-nvmm)
# On the host, libraries of GStreamer, GLib, ORC and json-glib always come from the
# bundle (the build was linked against these); any other bundled library only where the
# host has none of that name, so a host's newer libstdc++ or zlib is never shadowed.
#
# Env: PLUGINS (plug-in names, default below), NPP (a directory holding the NPP
# libraries, or "skip"; default: fetched with pip into the wheel cache),
# GPUNET_WHEEL_CACHE (as tests/gst/nvds-libs.sh), XZ_OPT (default -6 -T0).  A missing
# plug-in is named and left out; a missing NPP or DeepStream wheel is named and left out
# (element-nvmm then skips).
# Exit: 0 made, 1 a library could not be found, 2 usage.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BUILD=${1:-build-gpu}
OUTDIR=${2:-gpu-bundle}
case ${1:-} in -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -le 2 ] || { echo "gpu-bundle: at most two arguments, BUILD_DIR and BUNDLE_DIR" >&2; exit 2; }
if [ ! -x "$BUILD/tools/gpunet-bench" ]; then
  echo "gpu-bundle: $BUILD/tools/gpunet-bench not found: build first (meson setup $BUILD" \
    "-Dcuda=enabled -Dgpu_archs=90 && ninja -C $BUILD), or pass the build directory" >&2
  exit 2
fi
PLUGINS=${PLUGINS:-"coreelements videotestsrc videoconvertscale videoconvert videoscale
  x264 openh264 videoparsersbad isomp4 matroska nvcodec playback typefindfunctions app"}
export XZ_OPT=${XZ_OPT:-"-6 -T0"}
gstlib=$(pkg-config --variable=libdir gstreamer-1.0)
plugdir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
scanner=$(pkg-config --variable=pluginscannerdir gstreamer-1.0)/gst-plugin-scanner
for t in gst-launch-1.0 gst-inspect-1.0; do
  command -v $t >/dev/null || { echo "gpu-bundle: $t not found: install gstreamer1.0-tools" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/rt/bin" "$stage/rt/lib" "$stage/rt/plugins" "$stage/rt/libexec" \
  "$stage/build"

# the build: what gpu-check runs, and every shared object
{
  grep -oE '\$TOOLS/(\.\./tests/)?[A-Za-z0-9_-]+' "$HERE/gpu-check.sh" \
    | sed 's|^\$TOOLS/|./tools/|; s|^\./tools/\.\./|./|' | sort -u \
    | while read -r f; do if [ -f "$BUILD/$f" ]; then echo "$f"; fi; done
  (cd "$BUILD" && find . -type f -name '*.so*' ! -path '*/meson-*' ! -path '*.p/*')
} > "$stage/elf.txt"
(cd "$BUILD" && tar -cf - -T "$stage/elf.txt") | tar -C "$stage/build" -xf -

# the runtime: programs and plug-ins
cp -L "$(command -v gst-launch-1.0)" "$(command -v gst-inspect-1.0)" "$stage/rt/bin/"
cp -L "$scanner" "$stage/rt/libexec/"
for p in $PLUGINS; do
  if [ -f "$plugdir/libgst$p.so" ]; then
    cp -L "$plugdir/libgst$p.so" "$stage/rt/plugins/"
  else
    echo "gpu-bundle: plug-in '$p' is not on this machine ($plugdir): left out"
  fi
done

# system: what the GPU host brings itself, and must (its driver, its CUDA)
system_lib () {
  case $1 in
    ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libutil.so*) return 0 ;;
    libcuda.so*|libnvidia-*|libnvcuvid*|libcudart*|libcudnn*|libcublas*|libnvrtc*|libnvJitLink*|libcufft*|libcurand*|libnpp*) return 0 ;;
  esac
  return 1
}
# the DeepStream wheel, fetched and unpacked where the NVMM tests keep it (its unpacked
# copy compresses to 12.5 MB against the wheel's 15.8); what its libraries need beyond
# themselves (libv4lconvert) joins the runtime
cache=${GPUNET_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gst-gpunet/wheels}
ds=""
if sh "$ROOT/tests/gst/nvds-libs.sh" true 2>/dev/null; then
  ds=$(cd "$cache" && ls -d nvidia-deepstream-videodecode-cu13-*-x86_64 2>/dev/null | head -n 1)
fi

# every library of the programs, plug-ins, the build and the DeepStream wheel, from ldd:
# found with the build's own run paths (ldd resolves them), GStreamer's and the wheel's
# library directories
missing=""
while read -r f; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    system_lib "$name" && continue
    if [ "$path" = not ]; then
      missing="$missing $name($f)"
      continue
    fi
    case $path in "$ROOT"/*|"$(cd "$BUILD" && pwd)"/*|"$cache"/*) continue ;; esac
    [ -f "$stage/rt/lib/$name" ] || cp -L "$path" "$stage/rt/lib/$name"
  done < <(LD_LIBRARY_PATH=$gstlib${ds:+:$cache/$ds/nvidia/deepstream_videodecode/_libs} \
    ldd "$f" 2>/dev/null || true)
done < <(find "$stage/rt/bin" "$stage/rt/libexec" "$stage/rt/plugins" -type f;
  [ -z "$ds" ] || find "$cache/$ds" -name '*.so*' -type f;
  sed "s|^\.|$(cd "$BUILD" && pwd)|" "$stage/elf.txt")
if [ -n "$missing" ]; then
  echo "gpu-bundle: libraries not found on this machine:$missing" >&2
  echo "gpu-bundle: install them (scripts/install-deps.sh), or leave the plug-in out with PLUGINS" >&2
  exit 1
fi

# NPP: from a directory, or from the PyPI wheel (its version must match CUDA 13)
NPP=${NPP:-}
if [ "$NPP" != skip ]; then
  if [ -z "$NPP" ]; then
    mkdir -p "$cache"
    whl=$(ls "$cache"/nvidia_npp-13.*.whl 2>/dev/null | head -n 1 || true)
    [ -n "$whl" ] || python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --dest "$cache" "nvidia-npp>=13,<14" >/dev/null 2>&1 || true
    whl=$(ls "$cache"/nvidia_npp-13.*.whl 2>/dev/null | head -n 1 || true)
    if [ -n "$whl" ]; then
      NPP=$stage/npp
      python3 -m zipfile -e "$whl" "$NPP"
    fi
  fi
  n=0
  for l in libnppc libnppig libnppidei; do
    f=$( { [ -n "$NPP" ] && find "$NPP" -name "$l.so.*" -type f; } 2>/dev/null | head -n 1 || true)
    [ -n "$f" ] && cp -L "$f" "$stage/rt/lib/" && n=$((n + 1))
  done
  [ $n -eq 3 ] || echo "gpu-bundle: NPP's libraries not found (no network for pip?): left out;" \
    "element-nvmm needs them unless the GPU host has NPP"
fi

rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"
tar -C "$stage/build" -cJf "$OUTDIR/build.tar.xz" .
tar -C "$stage/rt" -cJf "$OUTDIR/runtime.tar.xz" .
if [ -n "$ds" ]; then
  tar -C "$cache" -cJf "$OUTDIR/deepstream.tar.xz" "$ds"
fi
[ -f "$OUTDIR/deepstream.tar.xz" ] || echo "gpu-bundle: no DeepStream wheel: element-nvmm will skip"
cp "$HERE/gpu-bundle-run.sh" "$OUTDIR/run.sh"
chmod +x "$OUTDIR/run.sh"
printf 'gpu-bundle: %s: %s (build %s, runtime %s: %d libraries, %d plug-ins)\n' \
  "$OUTDIR" "$(du -sh "$OUTDIR" | cut -f1)" "$(du -h "$OUTDIR/build.tar.xz" | cut -f1)" \
  "$(du -h "$OUTDIR/runtime.tar.xz" | cut -f1)" "$(ls "$stage/rt/lib" | wc -l)" \
  "$(ls "$stage/rt/plugins" | wc -l)"
