#!/usr/bin/env bash
# Installs what the build needs (Debian packages, idempotent), builds gst-gpunet and runs
# the fast suite: every test except the `slow` suite, then the engine's tests and the
# element's GstCheck test again in a build with AddressSanitizer + UBSan.  Then the CPU
# code paths of our kernels (portable, AVX2, AVX-512, AVX-512 BF16/VNNI, AMX) that the
# tests ran and those they could not run on this CPU, as the tests reported them; the last
# line is "N passed, S skipped, F failed".
#
#   scripts/run-tests.sh          the fast suite (2 to 2.5 minutes on two quiet cores)
#   scripts/run-tests.sh --slow   then the slow sweeps behind it: the seven full-size models
#                                 against float64, the op tests in both channel blocks, the
#                                 fuzzers, and under the sanitizers the CUDA arithmetic and
#                                 those op tests (CI runs this: .ci/run)
#   scripts/run-tests.sh --emulated  for a CPU that QEMU emulates (scripts/test-distro.sh
#                                 bookworm-arm64), where code runs 10-100 times slower:
#                                 the normal build, then the suite `engine` and the
#                                 element's own tests (EMULATED_GST below) with 10 times
#                                 the time limits and GPUNET_TEST_EMULATED=1; not the
#                                 tools' and streams' tests, whose stall and open
#                                 timeouts assume a real CPU's speed, nor the CUDA
#                                 arithmetic sweeps; no sanitizer build
#
# env GPU_ARCHS narrows the CUDA build (default 75); BUILD_DIR / ASAN_BUILD_DIR move the
# build directories.
set -euo pipefail
cd "$(dirname "$0")/.."

slow=0 emulated=0
case "${1:-}" in
  "") ;;
  --slow) slow=1 ;;
  --emulated) emulated=1 ;;
  *) echo "usage: scripts/run-tests.sh [--slow | --emulated]" >&2; exit 2 ;;
esac

t0=$(date +%s)
scripts/install-deps.sh

GPU_ARCHS=${GPU_ARCHS:-75}
BUILD=${BUILD_DIR:-build}
ASAN_BUILD=${ASAN_BUILD_DIR:-build-asan}

setup () {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

# the test logs of this run only: meson appends to nothing, but an earlier run's logs of
# the other kind must not be counted
rm -f "$BUILD"/meson-logs/testlog-{fast,slow,gst}.json "$ASAN_BUILD"/meson-logs/testlog-{fast,slow}.json

t1=$(date +%s)
setup "$BUILD" -Dgpu_archs="$GPU_ARCHS"
ninja -C "$BUILD"
echo "CPU backends built: $(cat "$BUILD/cpu-backends.txt")"
if [ $emulated = 1 ]; then
  EMULATED_GST="gst-element gst-regions gst-track-cache element-check-regions
    element-check-cycles gst-example-app"
  # the tests keep every code path but leave out their largest repetitions
  # (tests/check.h, check_emulated); libcheck's timeouts stretched as meson's
  export GPUNET_TEST_EMULATED=1 CK_TIMEOUT_MULTIPLIER=10
  status=0
  meson test -C "$BUILD" --print-errorlogs --num-processes 2 --timeout-multiplier 10 \
    --suite engine --no-suite slow --no-suite cuda --logbase testlog-fast || status=1
  meson test -C "$BUILD" --print-errorlogs --num-processes 2 --timeout-multiplier 10 \
    --logbase testlog-gst $EMULATED_GST || status=1
  echo "run-tests.sh: emulated: $(($(date +%s) - t0)) s in all"
  python3 scripts/test-summary.py "$BUILD/meson-logs/testlog-fast.json" \
    "$BUILD/meson-logs/testlog-gst.json" || status=1
  exit $status
fi
# the sanitizer build: CPU backends; of the GStreamer side the plugin and its element test
# only (tests/gst/meson.build says why); -O1 (the sanitizers' usual level) runs the
# numeric tests about a fifth faster than -O0 and keeps the stacks readable
setup "$ASAN_BUILD" -Dbuildtype=debug -Doptimization=1 -Db_sanitize=address,undefined \
  -Db_lundef=false -Dcuda=disabled -Dgst=auto
# only what its fast suite runs (meson's `all` would build every test's executable); the
# slow pass's `meson test` builds the rest
ninja -C "$ASAN_BUILD" $(python3 scripts/suite-targets.py "$ASAN_BUILD" slow sanitize-slow)
t2=$(date +%s)

export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
meson test -C "$BUILD" --print-errorlogs --num-processes 2 --no-suite slow \
  --logbase testlog-fast || status=1
# the suite 'sanitize-slow' (the CUDA arithmetic sweeps, host code only here, and the
# benchmark's driver) takes minutes under the sanitizers: it runs there in the slow pass
meson test -C "$ASAN_BUILD" --print-errorlogs --num-processes 2 --no-suite slow \
  --no-suite sanitize-slow --logbase testlog-fast || status=1
t3=$(date +%s)
echo "run-tests.sh: fast suite: build $((t2 - t1)) s, tests $((t3 - t2)) s, $((t3 - t0)) s in all"

logs=("$BUILD/meson-logs/testlog-fast.json" "$ASAN_BUILD/meson-logs/testlog-fast.json")
if [ $slow = 1 ]; then
  meson test -C "$BUILD" --print-errorlogs --num-processes 2 --suite slow \
    --logbase testlog-slow || status=1
  meson test -C "$ASAN_BUILD" --print-errorlogs --num-processes 2 --suite sanitize-slow \
    --logbase testlog-slow || status=1
  t4=$(date +%s)
  echo "run-tests.sh: slow suite: $((t4 - t3)) s"
  logs+=("$BUILD/meson-logs/testlog-slow.json" "$ASAN_BUILD/meson-logs/testlog-slow.json")
fi

# the CPU paths run and not run, then the last line: "N passed, S skipped, F failed"
# (skipped tests are not passes)
python3 scripts/test-summary.py "${logs[@]}" || status=1
exit $status
