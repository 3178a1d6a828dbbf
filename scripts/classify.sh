#!/usr/bin/env bash
# The main job: installs what is needed, builds gst-gpunet, and runs a classification
# pipeline that prints every frame's top classes.
#   scripts/classify.sh [--model NAME_OR_JSON] [--checkpoint FILE] [--input VIDEO] [--frames N]
#                       [-- extra gpunetclassify properties, e.g. top-k=3 interval=2]
# Without --checkpoint it uses the small test-fixture model (16 classes) so it runs from a
# fresh clone; with NVIDIA's weights, e.g. --model gpunet-0 --checkpoint 0.65ms.pth.tar,
# it prints ImageNet labels.  Without --input it classifies a test pattern.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

model="" checkpoint="" input="" frames=30 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --checkpoint) checkpoint=$2; shift 2 ;;
    --input) input=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "classify.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$checkpoint" ]; then
  model=${model:-$root/tests/data/fixtures/tiny-a.json}
  checkpoint=$root/tests/data/fixtures/tiny-a/tiny-a.pth.tar
  echo "(no --checkpoint: using the 16-class test-fixture model; see README for NVIDIA's weights)"
fi
model=${model:-gpunet-0}

scripts/install-deps.sh
BUILD=${BUILD_DIR:-build}
if [ -f "$BUILD/build.ninja" ]; then meson setup --reconfigure "$BUILD" >/dev/null; else meson setup "$BUILD" >/dev/null; fi
ninja -C "$BUILD" >/dev/null

export GST_PLUGIN_PATH_1_0="$(cd "$BUILD" && pwd)/gst"
if [ -n "$input" ]; then
  src="filesrc location=\"$input\" ! decodebin ! videoconvert"
else
  src="videotestsrc num-buffers=$frames pattern=smpte ! video/x-raw,width=1280,height=720"
fi
exec "$BUILD/gst/gpunet-example-app" --pipeline \
  "$src ! gpunetclassify name=classify model=\"$model\" checkpoint=\"$checkpoint\" ${extra[*]:-} ! fakesink"
