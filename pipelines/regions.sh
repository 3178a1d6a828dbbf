#!/bin/sh
# regions.sh [VIDEO_FILE]: classify the faces OpenCV's facedetect finds (its
# GstVideoRegionOfInterestMeta of type "face"), not the whole frame, in a video
# file or, without an argument, the camera; one bus message per face and one
# JSON line per face in JSON (default regions.jsonl). Needs gst-plugins-bad's
# opencv plugin (Debian: gstreamer1.0-opencv). Use a model trained on the classes
# you want for faces (EXTRA="labels=my-classes.txt"); see env.sh for
# MODEL/CHECKPOINT/EXTRA. For other detectors set ROI_TYPES (empty: all regions).
set -eu
. "$(dirname "$0")/env.sh"
if ! gst-inspect-1.0 facedetect >/dev/null 2>&1; then
  echo "facedetect not found: install gst-plugins-bad's opencv plugin" \
    "(Debian: gstreamer1.0-opencv)" >&2
  exit 2
fi
# facedetect outputs RGB, which gpunetclassify reads as it is
REGIONS="roi-mode=regions roi-types=${ROI_TYPES-face} post-messages=true"
if [ $# -ge 1 ]; then
  # shellcheck disable=SC2086
  exec gst-launch-1.0 -m filesrc location="$1" ! decodebin ! videoconvert ! \
    facedetect display=false ! \
    $CLASSIFY $REGIONS json-output="${JSON:-regions.jsonl}" ! fakesink
fi
# shellcheck disable=SC2086
exec gst-launch-1.0 -m v4l2src ! videoconvert ! facedetect display=false ! \
  $CLASSIFY $REGIONS json-output="${JSON:-regions.jsonl}" ! fakesink
