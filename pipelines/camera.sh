#!/bin/sh
# camera.sh [DEVICE]: classify a V4L2 camera (default /dev/video0), every fifth
# frame by default (INTERVAL=4), printing one bus message per frame; SINK=
# autovideosink to also show the picture. See env.sh for MODEL/CHECKPOINT/EXTRA.
set -eu
. "$(dirname "$0")/env.sh"
# shellcheck disable=SC2086
exec gst-launch-1.0 -m v4l2src device="${1:-/dev/video0}" ! videoconvert ! \
  video/x-raw,format=NV12 ! \
  $CLASSIFY interval="${INTERVAL:-4}" post-messages=true ! \
  videoconvert ! "${SINK:-fakesink}"
