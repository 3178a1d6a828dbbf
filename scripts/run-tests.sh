#!/usr/bin/env bash
# Installs what the build needs (Debian packages, idempotent), builds gst-gpunet, runs
# every test, then rebuilds the engine with AddressSanitizer + UBSan and runs its tests
# again.  Usage: scripts/run-tests.sh   (env GPU_ARCHS narrows the CUDA build, default 75)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

GPU_ARCHS=${GPU_ARCHS:-75}
BUILD=${BUILD_DIR:-build}
ASAN_BUILD=${ASAN_BUILD_DIR:-build-asan}

setup () {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@"
  fi
}

setup "$BUILD" -Dgpu_archs="$GPU_ARCHS"
ninja -C "$BUILD"
status=0
meson test -C "$BUILD" --print-errorlogs --num-processes 2 || status=1

# the sanitizer build: engine and tools only, CPU backends; the slow suite (full-size
# models against float64) ran above and takes many minutes under the sanitizers
setup "$ASAN_BUILD" -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
  -Dcuda=disabled -Dgst=disabled
ninja -C "$ASAN_BUILD"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C "$ASAN_BUILD" --print-errorlogs --num-processes 2 --no-suite slow || status=1

# last line: "N passed, S skipped, F failed" (skipped tests are not passes)
python3 scripts/test-summary.py "$BUILD" "$ASAN_BUILD" || status=1
exit $status
