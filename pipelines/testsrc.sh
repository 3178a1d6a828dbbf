#!/bin/sh
# testsrc.sh: classify FRAMES (default 30) test-pattern frames and print one bus
# message per frame (gst-launch-1.0 -m). See env.sh for MODEL/CHECKPOINT/EXTRA.
set -eu
. "$(dirname "$0")/env.sh"
# shellcheck disable=SC2086
exec gst-launch-1.0 -m videotestsrc num-buffers="${FRAMES:-30}" ! \
  video/x-raw,width=640,height=480 ! videoconvert ! \
  $CLASSIFY post-messages=true ! fakesink
