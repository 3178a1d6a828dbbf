#!/usr/bin/env bash
# Downloads NVIDIA's published checkpoint of a built-in GPUNet, unzips it, checks that
# it loads with build/tools/gpunet-run, and prints the command lines that use it.
#   scripts/get-weights.sh [--dir DIR] [--from-zip FILE] [--arch JSON] NAME
# NAME: gpunet-0 gpunet-1 gpunet-2 gpunet-p0 gpunet-p1 gpunet-d1 gpunet-d2 (or NVIDIA's
# 0.65ms 0.85ms 1.75ms 0.5ms-D 0.8ms-D 1.25ms-D 2.25ms-D). Files go to DIR (default
# weights/NAME). --from-zip uses a zip you downloaded already (no network needed);
# --arch checks the weights against that architecture JSON instead of NAME.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

dir="" zip="" arch="" name=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir|--from-zip|--arch)
      [ $# -ge 2 ] || { echo "get-weights.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --from-zip) zip=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    -*) echo "get-weights.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$name" ] || { echo "get-weights.sh: one NAME only" >&2; exit 2; }
       name=$1; shift ;;
  esac
done

case "$name" in
  gpunet-0|0.65ms) name=gpunet-0 ;;
  gpunet-1|0.85ms) name=gpunet-1 ;;
  gpunet-2|1.75ms) name=gpunet-2 ;;
  gpunet-p0|0.5ms-D) name=gpunet-p0 ;;
  gpunet-p1|0.8ms-D) name=gpunet-p1 ;;
  gpunet-d1|1.25ms-D) name=gpunet-d1 ;;
  gpunet-d2|2.25ms-D) name=gpunet-d2 ;;
  "") echo "get-weights.sh: which model? gpunet-0 gpunet-1 gpunet-2 gpunet-p0 gpunet-p1" \
        "gpunet-d1 gpunet-d2 (see --help)" >&2; exit 2 ;;
  *) echo "get-weights.sh: '$name' is not a built-in model: gpunet-0 gpunet-1 gpunet-2" \
       "gpunet-p0 gpunet-p1 gpunet-d1 gpunet-d2" >&2; exit 2 ;;
esac
slug=${name#gpunet-}
base=${GPUNET_NGC_BASE:-https://api.ngc.nvidia.com/v2/models/nvidia/dle}
url="$base/gpunet_${slug}_pyt_ckpt/versions/21.12.0_amp/zip"
dir=${dir:-$root/weights/$name}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ -z "$zip" ]; then
  zip="$dir/gpunet_${slug}_pyt_ckpt.zip"
  echo "downloading $url"
  part="$zip.part"
  # a progress bar on a terminal; nothing else from curl/wget (the failure is one
  # sentence of ours)
  if command -v curl >/dev/null; then
    fetch=(curl -fsL --connect-timeout 15 -o "$part" "$url")
    [ -t 2 ] && fetch=(curl -fL --progress-bar --connect-timeout 15 -o "$part" "$url")
  else
    fetch=(wget -q --tries=1 --timeout=15 -O "$part" "$url")
  fi
  if [ -t 2 ]; then "${fetch[@]}"; else "${fetch[@]}" 2>/dev/null; fi || failed=1
  if [ -n "${failed:-}" ]; then
    rm -f "$part"
    echo "get-weights.sh: cannot download $url (no network here?); fetch it elsewhere and" \
      "run scripts/get-weights.sh --from-zip FILE $name" >&2
    exit 1
  fi
  mv "$part" "$zip"
fi
[ -f "$zip" ] || { echo "get-weights.sh: '$zip': no such file" >&2; exit 2; }

# the checkpoint inside the zip (NVIDIA's 0.65ms.pth.tar etc.), extracted into DIR
ckpt=$(python3 - "$zip" "$dir" <<'PY'
import os, shutil, sys, zipfile
zpath, out = sys.argv[1], sys.argv[2]
try:
    z = zipfile.ZipFile(zpath)
except (zipfile.BadZipFile, OSError) as e:
    sys.exit(f"get-weights.sh: '{zpath}' is not a zip file ({e})")
names = [n for n in z.namelist() if n.endswith((".pth.tar", ".pth", ".safetensors"))]
if not names:
    sys.exit(f"get-weights.sh: '{zpath}' holds no .pth.tar, .pth or .safetensors file")
name = sorted(names, key=lambda n: (not n.endswith(".pth.tar"), n))[0]
dest = os.path.join(out, os.path.basename(name))
tmp = dest + ".part"
with z.open(name) as src, open(tmp, "wb") as dst:
    shutil.copyfileobj(src, dst)
os.replace(tmp, dest)
print(dest)
PY
)

run=${GPUNET_RUN:-$root/${BUILD_DIR:-build}/tools/gpunet-run}
if [ ! -x "$run" ] && [ -f "$root/${BUILD_DIR:-build}/build.ninja" ]; then
  ninja -C "$root/${BUILD_DIR:-build}" tools/gpunet-run >/dev/null
fi
if [ ! -x "$run" ]; then
  echo "$ckpt: extracted; not checked (build first: scripts/classify.sh or ninja -C build)"
else
  # one grey frame through the element's preprocess and the whole network
  frame=$(mktemp)
  trap 'rm -f "$frame"' EXIT
  head -c $((64 * 64 * 3)) /dev/zero | tr '\0' '\200' > "$frame"
  if ! out=$("$run" --model "${arch:-$name}" --checkpoint "$ckpt" --frame "$frame" \
      --format RGB --width 64 --height 64 --top-k 1 2>&1); then
    echo "get-weights.sh: $ckpt does not load as ${arch:-$name}:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "$ckpt: loads as ${arch:-$name} (checked with gpunet-run)"
fi
m=${arch:-$name}
cat <<EOT

Use it:
  scripts/classify.sh --model $m --checkpoint $ckpt
  scripts/classify.sh --model $m --checkpoint $ckpt --input video.mp4
  build/tools/gpunet-run --model $m --checkpoint $ckpt --image photo.jpg
  gst-launch-1.0 videotestsrc num-buffers=10 ! videoconvert ! gpunetclassify model=$m checkpoint=$ckpt post-messages=true ! fakesink -m
EOT
