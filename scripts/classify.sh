#!/usr/bin/env bash
# The main job: installs what is needed, builds gst-gpunet, and runs a classification
# pipeline that prints every frame's top classes.
#   scripts/classify.sh [--model NAME_OR_JSON --checkpoint FILE] [--input VIDEO] [--frames N]
#                       [-- extra gpunetclassify properties, e.g. top-k=3 interval=2]
# Without --model/--checkpoint it uses the small test-fixture model (16 classes) so it
# runs from a fresh clone; a built-in model (gpunet-0 ... gpunet-d2) needs NVIDIA's
# checkpoint: scripts/get-weights.sh gpunet-0 fetches it and prints the command line.
# Without --input it classifies five test patterns in turn (30 frames); with --input it
# classifies the whole video, or its first N frames with --frames N.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

model="" checkpoint="" input="" frames="" extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model|--checkpoint|--input|--frames)
      [ $# -ge 2 ] || { echo "classify.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --model) model=$2; shift 2 ;;
    --checkpoint) checkpoint=$2; shift 2 ;;
    --input) input=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    *) echo "classify.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$frames" ] && ! [[ "$frames" =~ ^[1-9][0-9]*$ ]]; then
  echo "classify.sh: --frames needs a positive integer, got '$frames'" >&2
  exit 2
fi
if [ -n "$input" ] && [ ! -e "$input" ]; then
  echo "classify.sh: --input '$input': no such file" >&2
  exit 2
elif [ -n "$input" ] && [ ! -f "$input" ]; then
  echo "classify.sh: --input '$input' is not a regular file (a directory, FIFO or device):" \
    "give a video file" >&2
  exit 2
fi
if [ -z "$checkpoint" ]; then
  if [ -n "$model" ]; then
    # a real GPUNet with the 16-class fixture's weights can only fail, and confusingly
    if [ -f "$model" ]; then
      echo "classify.sh: the architecture '$model' needs --checkpoint FILE (its weights)" >&2
    else
      echo "classify.sh: $model needs --checkpoint (get it with scripts/get-weights.sh $model," \
        "which prints the command line to use)" >&2
    fi
    exit 2
  fi
  model=$root/tests/data/fixtures/tiny-a.json
  checkpoint=$root/tests/data/fixtures/tiny-a/tiny-a.pth.tar
  echo "(no --checkpoint: using the 16-class test-fixture model; scripts/get-weights.sh gets NVIDIA's)"
fi
model=${model:-gpunet-0}

scripts/install-deps.sh
BUILD=${BUILD_DIR:-build}
# the CUDA architectures of scripts/run-tests.sh (env GPU_ARCHS, default 75), so the two
# README commands share one build and never rebuild each other's CUDA objects
GPU_ARCHS=${GPU_ARCHS:-75}
if [ ! -f "$BUILD/build.ninja" ]; then
  echo "building (first run takes ~1.5 min, longer on a busy machine)..."
  meson setup "$BUILD" -Dgpu_archs="$GPU_ARCHS" >/dev/null
else
  meson setup --reconfigure "$BUILD" -Dgpu_archs="$GPU_ARCHS" >/dev/null
fi
# ninja's own progress lines ([12/97] Compiling ...) while there is work to do; the
# whole log when it fails
log=$(mktemp)
if ! ninja -C "$BUILD" 2>&1 | tee "$log" | grep --line-buffered -E '^\[[0-9]+/[0-9]+\] '; then
  if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    cat "$log" >&2; rm -f "$log"
    echo "classify.sh: the build failed" >&2
    exit 1
  fi
fi
rm -f "$log"

export GST_PLUGIN_PATH_1_0="$(cd "$BUILD" && pwd)/gst"
if [ -n "$input" ]; then
  # uridecodebin caps=video/x-raw: a file without video (audio only) then fails at
  # once with a missing plug-in, which the app names; decodebin ! videoconvert
  # sometimes waited forever on such a file (GStreamer's delayed link)
  abs=$(cd "$(dirname "$input")" && pwd)/$(basename "$input")
  uri=file://$(export LC_ALL=C; for ((k = 0; k < ${#abs}; k++)); do
    ch=${abs:k:1}     # a byte: percent-encoded unless plain
    case "$ch" in
      [A-Za-z0-9/._~-]) printf '%s' "$ch" ;;
      *) printf '%%%02X' "'$ch" ;;
    esac
  done)
  src="uridecodebin uri=\"$uri\" caps=video/x-raw ! videoconvert"
else
  # five test patterns one after the other (a moving ball among them): the picture
  # changes, and so do the classes; timestamps run on across the patterns
  # (N frames split over the patterns, the first ones taking the remainder)
  n=${frames:-30} patterns=(smpte gradient ball circular snow)
  np=${#patterns[@]} src="concat name=c" i=0 start=0
  for p in "${patterns[@]}"; do
    count=$(( n / np + (i < n % np ? 1 : 0) ))
    i=$((i + 1))
    [ "$count" -gt 0 ] || continue
    src="$src videotestsrc num-buffers=$count pattern=$p timestamp-offset=$((start * 1000000000 / 30))"
    src="$src ! video/x-raw,width=1280,height=720,framerate=30/1 ! c."
    start=$((start + count))
  done
  src="$src c."
fi
# --frames N: the app prints N frames, then ends the pipeline
exec "$BUILD/gst/gpunet-example-app" ${frames:+--frames "$frames"} --pipeline \
  "$src ! gpunetclassify name=classify model=\"$model\" checkpoint=\"$checkpoint\" ${extra[*]:-} ! fakesink"
