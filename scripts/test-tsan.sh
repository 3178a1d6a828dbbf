#!/usr/bin/env bash
# Builds gst-gpunet with ThreadSanitizer (CPU backends, no CUDA) and runs the engine's
# threaded tests and the element's suite `gst` under it; the last line counts the tests
# and the TSan reports.  Exits 0 when every test passed with no report, 1 otherwise, 77
# when the compiler or the machine cannot run a TSan program.  Not part of CI or of
# scripts/run-tests.sh: it takes minutes on two cores.
#
#   scripts/test-tsan.sh            (env TSAN_BUILD_DIR moves the build, default build-tsan)
#
# What the run needs beside the build (tests/tsan/):
# - glib-tsan.c, preloaded into every test: GLib's GMutex, GCond, GAsyncQueue, thread
#   pools, quarks and GStreamer's bus hand-over are futexes and atomics inside libraries
#   TSan does not instrument; the preload tells TSan where they order threads.  Without
#   it every lock-protected field of ours would be reported.
# - tsan.supp: GLib, glibc and system-plugin internals only, never our code.
# - every test runs on one CPU (taskset): libgomp, which TSan does not instrument either,
#   then starts no OpenMP threads (our backends size their teams by the CPUs a process
#   may use), so OpenMP's own barriers cannot show up as races; the engine's worker
#   threads, the element's streaming threads and src task still run side by side.
#   The op tests and the OpenMP tests (backend_ops, bf16, int8, steal, cpu_wait, simd)
#   are left out: they run no threads of ours.
# - the Python tests that load the plugin into python3 (gst-python-*, gst-overlay-demo)
#   are left out: an uninstrumented python3 cannot load an instrumented plugin.  The
#   gpunet-streams tests run: python3 only starts the instrumented tool (the preload's
#   TSan calls are weak there), on synthetic streams, small JPEG/VP8 clips and FIFOs
#   that hang; they cover a failed input's source stopped in the tool's close thread
#   while the other streams run (tsan.supp: decodebin's lock order).  Left out:
#   gst-streams-rtsp (a loopback RTSP server, skipped where none is installed),
#   gst-example-damage, gst-tag-swap and gst-streams-held (its last case runs
#   gpunet-tag): they report lock orders inside libavcodec and an error message's
#   GError freed inside libgstbase against gpunet-tag's read of it, which this preload
#   does not yet explain; none has a frame of the engine or the element.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${TSAN_BUILD_DIR:-build-tsan}
CC=${CC:-cc}

# a TSan program must build and run here (some kernels' address layouts refuse it)
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int main (void) { return 0; }\n' > "$probe/t.c"
if ! "$CC" -fsanitize=thread -o "$probe/t" "$probe/t.c" 2>/dev/null || ! "$probe/t"; then
  echo "test-tsan.sh: $CC cannot build or run a ThreadSanitizer program here: skipped"
  exit 77
fi
command -v taskset >/dev/null || { echo "test-tsan.sh: taskset (util-linux) is missing: skipped"; exit 77; }

opts=(-Db_sanitize=thread -Dbuildtype=debugoptimized -Db_lundef=false -Dcuda=disabled
  -Dnvmm=disabled -Dcameras=disabled -Donnx=disabled -Dgst=auto)
if [ -f "$BUILD/build.ninja" ]; then
  meson setup --reconfigure "$BUILD" "${opts[@]}" >/dev/null
else
  meson setup "$BUILD" "${opts[@]}" >/dev/null
fi

ENGINE_TESTS="json labels arch arch-reference checkpoint golden golden-reference models
  preprocess engine engine_pipeline backends graph_pad"
GST_TESTS="gst-track-cache gst-element gst-streams gst-regions gst-live gst-chaos element-check-regions
  element-check-cycles gst-example-app"
TOOL_TESTS="gst-streams-tool gst-streams-timeouts"
ninja -j2 -C "$BUILD" $(python3 scripts/suite-targets.py "$BUILD" slow sanitize-slow cuda nvmm \
  tools)
"$CC" -O1 -shared -fPIC -o "$BUILD/glib-tsan.so" tests/tsan/glib-tsan.c -ldl

reports=$(cd "$BUILD" && pwd)/tsan-reports
rm -rf "$reports" "$BUILD"/meson-logs/testlog-tsan*
mkdir -p "$reports"
cpu=$(taskset -pc $$ | sed 's/.*: //; s/[-,].*//')
export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$reports/report suppressions=$PWD/tests/tsan/tsan.supp"
# the plugin is scanned in each test's own process (the plugin scanner is not
# instrumented and cannot load it), into a registry of this build's
export GST_REGISTRY_FORK=no GST_REGISTRY_1_0="$PWD/$BUILD/tsan-registry.bin"
# GLib's slice allocator hands memory between threads out of TSan's sight
export G_SLICE=always-malloc

status=0
# the element tests' registry first, in a process that forks nothing (GST_CHECKS names no
# test case): a scan loads every system plugin, some start threads (libusb's), and TSan
# stops a GstCheck test that then forks for its cases; the tests find the registry made
meson test -C "$BUILD" --no-rebuild --num-processes 1 --logbase tsan-registry \
  --wrapper "taskset -c $cpu env LD_PRELOAD=$PWD/$BUILD/glib-tsan.so GST_CHECKS=none" \
  gst-element >/dev/null 2>&1 || true
# shellcheck disable=SC2086
meson test -C "$BUILD" --no-rebuild --print-errorlogs --num-processes 1 --logbase testlog-tsan \
  --wrapper "taskset -c $cpu env LD_PRELOAD=$PWD/$BUILD/glib-tsan.so" \
  $ENGINE_TESTS $GST_TESTS $TOOL_TESTS || status=1

n=$(cat "$reports"/report.* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
if [ "$n" != 0 ]; then
  echo "test-tsan.sh: the reports (in $reports):"
  cat "$reports"/report.* | grep '^SUMMARY' | sed 's/ (pid=[0-9]*)//' | sort | uniq -c | sort -rn
  status=1
fi
# meson names the log after the wrapper too (testlog-tsan-taskset.json)
python3 - "$n" "$BUILD"/meson-logs/testlog-tsan*.json <<'EOF'
import json, sys
res = [json.loads(line)['result'] for f in sys.argv[2:] for line in open(f)]
ok = sum(r == 'OK' for r in res)
skip = sum(r == 'SKIP' for r in res)
print(f'test-tsan.sh: {ok} passed, {skip} skipped, {len(res) - ok - skip} failed; '
      f'{sys.argv[1]} ThreadSanitizer reports')
EOF
exit $status
