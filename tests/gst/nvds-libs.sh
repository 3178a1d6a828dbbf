#!/bin/sh
# nvds-libs.sh PROGRAM [ARGS...]: runs PROGRAM with GPUNET_NVDS_LIB_DIR set to the
# directory of NVIDIA's real DeepStream metadata libraries (libnvds_meta.so,
# libnvdsgst_meta.so), taken from the PyPI wheel nvidia-deepstream-videodecode-cu13.
# The wheel is fetched once with pip into the cache directory
# (GPUNET_WHEEL_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/gst-gpunet/wheels) and
# unpacked beside it; later runs use the cache.  The wheel and its unpacked copy are this
# machine's architecture's (one cache can serve an x86_64 host and an emulated arm64
# root).  Exits 77 (skipped) only when the wheel cannot be fetched, as for an
# architecture NVIDIA publishes none for.
set -eu
version=9.0.2
arch=$(uname -m)
cache=${GPUNET_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gst-gpunet/wheels}
dir=$cache/nvidia-deepstream-videodecode-cu13-$version-$arch
libs=$dir/nvidia/deepstream_videodecode/_libs

if [ ! -f "$libs/libnvdsgst_meta.so" ]; then
  mkdir -p "$cache"
  wheel=$(ls "$cache"/nvidia_deepstream_videodecode_cu13-$version-*_"$arch".whl 2>/dev/null \
    | head -n 1 || true)
  if [ -z "$wheel" ]; then
    if ! python3 -m pip download --quiet --no-deps --dest "$cache" \
        "nvidia-deepstream-videodecode-cu13==$version" >&2; then
      echo "SKIP: cannot fetch the wheel nvidia-deepstream-videodecode-cu13==$version" \
        "for $arch with pip (no network, no pip, or no wheel for $arch): the NVMM" \
        "tests need NVIDIA's real DeepStream metadata libraries; put the wheel in" \
        "$cache to run them" >&2
      exit 77
    fi
    wheel=$(ls "$cache"/nvidia_deepstream_videodecode_cu13-$version-*_"$arch".whl \
      2>/dev/null | head -n 1 || true)
    if [ -z "$wheel" ]; then
      echo "SKIP: pip fetched no $arch wheel of nvidia-deepstream-videodecode-cu13==$version" >&2
      exit 77
    fi
  fi
  # unpack into a private directory, then move it in place: parallel runs are safe
  tmp=$(mktemp -d "$cache/unpack.XXXXXX")
  python3 -m zipfile -e "$wheel" "$tmp"
  if ! mv -T "$tmp" "$dir" 2>/dev/null; then
    rm -rf "$tmp"
  fi
fi
if [ ! -f "$libs/libnvdsgst_meta.so" ]; then
  echo "FAIL: $libs holds no libnvdsgst_meta.so: the wheel's layout changed" >&2
  exit 1
fi
GPUNET_NVDS_LIB_DIR=$libs
export GPUNET_NVDS_LIB_DIR
exec "$@"
