#!/bin/sh
# cuda-decode.sh FILE.mp4: NVDEC decodes H.264 into GPU memory and gpunetclassify
# classifies the frames there (video/x-raw(memory:CUDAMemory): preprocess, network and
# top-k on the GPU; only the k results come back). Needs a GPU, the nvcodec plugin and
# a build with the CUDA backend and GStreamer's CUDA library. The nvh264dec !
# gpunetclassify part ran on an H100 (after qtdemux or an H.264 byte-stream, not
# parsebin): see docs/cuda.md. See env.sh for MODEL/CHECKPOINT/EXTRA.
set -eu
. "$(dirname "$0")/env.sh"
if [ $# -lt 1 ]; then
  echo "usage: $0 H264_MP4_FILE" >&2
  exit 2
fi
# The queue gives gpunetclassify its own thread, so the decoder does not wait while a
# frame is classified: on an H100 at 1080p this cost 0.4-0.5% of the decoder's rate with
# the queue and 0.8-0.9% without (docs/cuda.md).
# shellcheck disable=SC2086
exec gst-launch-1.0 -m filesrc location="$1" ! parsebin ! nvh264dec ! queue ! \
  $CLASSIFY backend=cuda post-messages=true ! fakesink
