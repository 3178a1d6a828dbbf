#!/usr/bin/env bash
# run.sh of a bundle made by scripts/gpu-bundle.sh: unpacks it once into
# ${GPU_BUNDLE_TMP:-/tmp/gpu-bundle} (build/, rt/), sets the paths, runs "$@".
#   BUNDLE/run.sh scripts/gpu-check.sh --profile short BUNDLE/build LOGS
# BUNDLE/build names the unpacked build (the argument is rewritten).  Libraries of
# GStreamer, GLib, ORC and json-glib come from the bundle; any other bundled one only
# where this host has no library of that name (ldconfig -p).  The CUDA toolkit's and
# cuDNN's libraries are the host's: /usr/local/cuda's, and those of the Python packages
# nvidia-* (a PyTorch image's cuDNN) when python3 finds them.
set -uo pipefail
BUNDLE=$(cd "$(dirname "$0")" && pwd)
T=${GPU_BUNDLE_TMP:-/tmp/gpu-bundle}
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
# untar ARCHIVE DIR: xz where the host has it, else Python's tarfile (a minimal image
# has python3 and no xz)
untar () {
  if command -v xz >/dev/null; then
    tar -C "$2" -xJf "$1"
  else
    python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
# the "tar" filter where Python has filters (3.12+): the archive is ours, keep its modes
t.extractall(sys.argv[2], **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))' "$1" "$2"
  fi
}
if [ ! -f "$T/.unpacked" ] || [ "$BUNDLE/build.tar.xz" -nt "$T/.unpacked" ]; then
  rm -rf "$T" && mkdir -p "$T/build" "$T/rt" "$T/lib" || exit 1
  untar "$BUNDLE/build.tar.xz" "$T/build" || exit 1
  untar "$BUNDLE/runtime.tar.xz" "$T/rt" || exit 1
  have=$(ldconfig -p 2>/dev/null | awk '{print $1}')
  for f in "$T"/rt/lib/*; do
    n=$(basename "$f")
    case $n in
      libgst*|libglib-*|libgobject-*|libgio-*|libgmodule-*|libgthread-*|liborc-*|libjson-glib-*) ;;
      *) echo "$have" | grep -qxF "$n" && continue ;;
    esac
    ln -s "$f" "$T/lib/$n"
  done
  touch "$T/.unpacked"
fi
cudalibs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && cudalibs=$cudalibs:$d
done
pylibs=$(python3 - 2>/dev/null <<'EOF'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
dirs = set()
for p in nvidia.__path__:
    for f in glob.glob(os.path.join(p, "**", "lib*.so*"), recursive=True):
        dirs.add(os.path.dirname(f))
print(":".join(sorted(dirs)))
EOF
)
export LD_LIBRARY_PATH=$T/lib$cudalibs${pylibs:+:$pylibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$T/rt/bin:$PATH
export GST_PLUGIN_SYSTEM_PATH_1_0=$T/rt/plugins
export GST_PLUGIN_SCANNER_1_0=$T/rt/libexec/gst-plugin-scanner
export GST_REGISTRY_1_0=${GST_REGISTRY_1_0:-$T/registry.bin}
# the build looks for its kernel modules at the build path of the machine it was made on
[ -f "$T/build/kernels/cuda/libgpunet-cuda.so" ] &&
  export GPUNET_CUDA_MODULE=${GPUNET_CUDA_MODULE:-$T/build/kernels/cuda/libgpunet-cuda.so}
[ -f "$T/build/kernels/onednn/libgpunet-cpu.so" ] &&
  export GPUNET_CPU_MODULE=${GPUNET_CPU_MODULE:-$T/build/kernels/onednn/libgpunet-cpu.so}
# tests/gst/nvds-libs.sh finds the DeepStream wheel here and unpacks it beside it
export GPUNET_WHEEL_CACHE=${GPUNET_WHEEL_CACHE:-$T/wheels}
if [ -f "$BUNDLE/deepstream.tar.xz" ] && [ ! -d "$GPUNET_WHEEL_CACHE" ]; then
  mkdir -p "$GPUNET_WHEEL_CACHE" && untar "$BUNDLE/deepstream.tar.xz" "$GPUNET_WHEEL_CACHE"
fi
args=()
for a in "$@"; do
  [ "$a" = "$BUNDLE/build" ] || [ "$a" = "$(basename "$BUNDLE")/build" ] && a=$T/build
  args+=("$a")
done
exec "${args[@]}"
