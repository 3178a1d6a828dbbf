#!/bin/sh
# deepstream.sh URI [URI...]: a DeepStream pipeline with gpunetclassify in it.
# nvurisrcbin decodes each URI into NVMM memory (nvv4l2decoder), nvstreammux batches the
# sources, a detector (nvinfer with the config file in DETECTOR_CONFIG) adds
# NvDsObjectMeta boxes, gpunetclassify classifies each box (roi-mode=regions: the
# secondary mode) and attaches NvDsClassifierMeta, and nvdsosd draws the labels.
# Without DETECTOR_CONFIG, gpunetclassify classifies the whole frames instead (the
# primary mode: a full-frame NvDsObjectMeta carries each frame's classes).
#
# Needs a DeepStream 6.1-9.x install (or its libraries on LD_LIBRARY_PATH: the element
# finds libnvds_meta.so and libnvdsgst_meta.so there, in
# /opt/nvidia/deepstream/deepstream/lib, or in NVDS_LIB_DIR) and a GPU. The frames
# reach gpunetclassify in CUDA memory: it needs backend=cuda (or nvvideoconvert
# nvbuf-memory-type=1/3, pinned or unified, for the CPU backend). NOT RUN ON A GPU: the
# element's NVMM path is tested on the CPU with NVIDIA's real metadata libraries and
# forged system-memory surfaces (docs/deepstream.md). See env.sh for MODEL/CHECKPOINT/
# EXTRA.
set -eu
. "$(dirname "$0")/env.sh"
if [ $# -lt 1 ]; then
  echo "usage: [DETECTOR_CONFIG=pgie.txt] $0 URI [URI...]" >&2
  exit 2
fi
n=$#
sources=""
i=0
for uri in "$@"; do
  sources="$sources nvurisrcbin uri=$uri ! mux.sink_$i"
  i=$((i + 1))
done
# the classifier's own unique id (gie-unique-id) and, with a detector, the detector's
# (operate-on-gie-id) as in an nvinfer secondary classifier's config
if [ -n "${DETECTOR_CONFIG:-}" ]; then
  stage="nvinfer config-file-path=$DETECTOR_CONFIG unique-id=1 ! \
    $CLASSIFY backend=cuda roi-mode=regions operate-on-gie-id=1 gie-unique-id=2"
else
  stage="$CLASSIFY backend=cuda gie-unique-id=2"
fi
if [ -n "${NVDS_LIB_DIR:-}" ]; then
  stage="$stage nvds-lib-dir=$NVDS_LIB_DIR"
fi
# shellcheck disable=SC2086
exec gst-launch-1.0 -m nvstreammux name=mux batch-size="$n" width=1280 height=720 \
  batched-push-timeout=40000 ! $stage ! nvvideoconvert ! nvdsosd ! \
  ${SINK:-fakesink} $sources
