#!/usr/bin/env bash
# Installs the Debian packages gst-gpunet builds and tests with, only when some are
# missing (so a second run is quick).  Needs root or sudo.
#
#   scripts/install-deps.sh [PACKAGE...]            these and the project's packages
#   scripts/install-deps.sh --missing [PACKAGE...]  print those not installed, install nothing
set -euo pipefail
list_only=0
if [ "${1:-}" = --missing ]; then
  list_only=1
  shift
fi
PKGS=(meson ninja-build pkg-config gcc libc6-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  libdnnl-dev libjson-glib-dev python3 python3-numpy python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  libprotobuf-c-dev protobuf-c-compiler python3-venv   # gpunet-convert --onnx; its test's venv
  gir1.2-gst-plugins-bad-1.0
  gstreamer1.0-libav   # avdec_h264: the tests' clips decode whichever H.264 encoder made them
  python3-pip   # fetches NVIDIA's DeepStream wheel for the nvmm tests (tests/gst/nvds-libs.sh)
  clang libclang-rt-dev   # the fuzzers (scripts/fuzz.sh); libFuzzer is only recommended
  # gpunet-cameras and its suite: MQTT, libsoup 3, a loopback RTSP server
  libmosquitto-dev libsoup-3.0-dev mosquitto mosquitto-clients libgstrtspserver-1.0-dev
  gir1.2-gst-rtsp-server-1.0 python3-gst-1.0)
PKGS+=("$@")
# one dpkg-query for all (one a package took seconds on a busy machine); it exits 1 when
# dpkg has never heard of one of them, as on a fresh machine, which is no error here
installed=" $( { dpkg-query -W -f='${Package} ${Status}\n' "${PKGS[@]}" 2>/dev/null || true; } |
  awk '/ install ok installed$/ { printf "%s ", $1 }')"
missing=()
for p in "${PKGS[@]}"; do
  [[ "$installed" == *" $p "* ]] || missing+=("$p")
done
if [ $list_only = 1 ]; then
  [ ${#missing[@]} -eq 0 ] || echo "${missing[*]}"
  exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
  --no-install-recommends "${missing[@]}"
