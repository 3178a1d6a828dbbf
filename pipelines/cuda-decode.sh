#!/bin/sh
# cuda-decode.sh FILE.mp4: placeholder for the CUDA issue. Today: NVDEC decodes
# H.264, cudadownload brings frames to system memory and gpunetclassify runs its
# CUDA backend on them. Once the element accepts video/x-raw(memory:CUDAMemory),
# drop cudadownload so frames never leave the GPU. Needs a GPU, the nvcodec plugin
# and a build with -Dcuda=enabled. See env.sh for MODEL/CHECKPOINT/EXTRA.
set -eu
. "$(dirname "$0")/env.sh"
if [ $# -lt 1 ]; then
  echo "usage: $0 H264_MP4_FILE" >&2
  exit 2
fi
# shellcheck disable=SC2086
exec gst-launch-1.0 -m filesrc location="$1" ! parsebin ! nvh264dec ! \
  cudadownload ! video/x-raw,format=NV12 ! \
  $CLASSIFY backend=cuda post-messages=true ! fakesink
