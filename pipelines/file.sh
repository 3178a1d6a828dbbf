#!/bin/sh
# file.sh FILE: decode any video file decodebin can read and classify its frames,
# printing one bus message per frame; SINK=autovideosink to also show the video.
# See env.sh for MODEL/CHECKPOINT/EXTRA.
set -eu
. "$(dirname "$0")/env.sh"
if [ $# -lt 1 ]; then
  echo "usage: $0 VIDEO_FILE" >&2
  exit 2
fi
# shellcheck disable=SC2086
exec gst-launch-1.0 -m filesrc location="$1" ! decodebin ! videoconvert ! \
  $CLASSIFY post-messages=true ! videoconvert ! "${SINK:-fakesink}"
