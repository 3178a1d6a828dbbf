#!/usr/bin/env bash
# The compiled tests of the fast suite again on an emulated CPU without AVX-512: each test
# program runs under QEMU's user-mode emulator (qemu-x86_64, Debian's qemu-user), which
# reports the chosen CPU model's CPUID and raises SIGILL on any instruction that model
# lacks.  So our CPU detection and oneDNN's see a real AVX2-only (or pre-AVX) machine,
# and an AVX-512 instruction reaching code that such a machine runs fails the test:
# what DNNL_MAX_CPU_ISA / GPUNET_CPU=simd=avx2 caps (.ci/run) cannot catch.
#
#   scripts/test-emulated-cpu.sh [haswell|nehalem] [BUILD_DIR]
#
#   haswell  AVX2 + FMA, no AVX-512 (the default): the AVX2 paths
#   nehalem  SSE4.2, no AVX: the portable paths
#
# It runs the tests whose program is one of ours (an ELF file in the build directory);
# tests driven by a Python or shell script start our tools as child processes, which run
# natively, so they are not run here.  BUILD_DIR (default build) must be built, as
# scripts/run-tests.sh leaves it.  The last line is "N passed, S skipped, F failed";
# exit 77 when qemu-user cannot be had.
set -uo pipefail
cd "$(dirname "$0")/.."

model=${1:-haswell}
build=${2:-build}
case "$model" in
  haswell) qcpu=Haswell-v2
           flags="fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt avx f16c fma avx2 bmi1 bmi2 movbe" ;;
  nehalem) qcpu=Nehalem
           flags="fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt" ;;
  *) echo "usage: scripts/test-emulated-cpu.sh [haswell|nehalem] [BUILD_DIR]" >&2; exit 2 ;;
esac

if ! command -v qemu-x86_64 >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-user >/dev/null 2>&1 || true
  fi
fi
if ! command -v qemu-x86_64 >/dev/null; then
  echo "test-emulated-cpu.sh: qemu-x86_64 not found (Debian package qemu-user): not run" >&2
  exit 77
fi
if [ ! -f "$build/meson-info/intro-tests.json" ]; then
  echo "test-emulated-cpu.sh: $build is not a configured build: run scripts/run-tests.sh first" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the wrapper meson puts before each test's command; QEMU's notes on CPUID bits TCG
# does not model are dropped, everything else the test prints is kept.  QEMU runs
# vector floating point 100 to 1000 times slower than the CPU: GPUNET_TEST_EMULATED
# tells the tests (tests/check.h, check_emulated) to keep every code path but leave
# out their largest repetitions, and libcheck's timeouts are stretched as meson's are
cat > "$work/wrap" <<EOF
#!/bin/sh
export GPUNET_TEST_EMULATED=1 CK_TIMEOUT_MULTIPLIER=20
qemu-x86_64 -cpu $qcpu "\$@" 2> "$work/stderr.\$\$"
rc=\$?
grep -v "^qemu-x86_64: warning: TCG doesn't support requested feature" "$work/stderr.\$\$" >&2
rm -f "$work/stderr.\$\$"
exit \$rc
EOF
chmod +x "$work/wrap"
printf 'flags\t\t: %s\n' "$flags" > "$work/cpuinfo"

# the fast suite's tests whose program is an ELF file of this build
mapfile -t names < <(python3 - "$build" <<'PY'
import json, os, sys
build = os.path.abspath(sys.argv[1])
with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
    tests = json.load(f)
for t in tests:
    suites = {s.split(":", 1)[-1] for s in t["suite"]}
    if "slow" in suites:
        continue
    exe = os.path.abspath(t["cmd"][0])
    if not exe.startswith(build + os.sep):
        continue
    try:
        with open(exe, "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
    except OSError:
        continue
    print(t["name"])
PY
)
if [ ${#names[@]} -eq 0 ]; then
  echo "test-emulated-cpu.sh: no compiled tests found in $build" >&2
  exit 1
fi

echo "test-emulated-cpu.sh: ${#names[@]} test programs on an emulated $qcpu (qemu-x86_64 $(qemu-x86_64 --version | sed -n 's/.*version \([0-9.]*\).*/\1/p'))"
log=testlog-qemu-$model
rm -f "$build/meson-logs/$log".json "$build/meson-logs/$log"-wrap.json
status=0
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 \
  --timeout-multiplier 20 --wrapper "$work/wrap" --logbase "$log" "${names[@]}" || status=1
# meson names the log of a wrapped run LOGBASE-wrap.json
logfile="$build/meson-logs/$log-wrap.json"
[ -f "$logfile" ] || logfile="$build/meson-logs/$log.json"
python3 scripts/test-summary.py --cpuinfo "$work/cpuinfo" "$logfile" || status=1
exit $status
