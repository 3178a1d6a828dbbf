#!/usr/bin/env python3
"""test_test_summary.py SCRIPT: scripts/test-summary.py over made-up meson test logs of an
AVX2-only host: the last line is exactly "N passed, S skipped, F failed" (CI reads it),
each failed test has its FAILED line, and the CPU paths are named from what the tests
printed: ran where a test that was not skipped ran it, not run with the CPU's lack (from
a made-up cpuinfo) and the tests that skipped it, or that no test runs code for it."""
import json
import os
import subprocess
import sys
import tempfile

script = sys.argv[1]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)


def record(name, result, stdout=""):
    return json.dumps({"name": "gst-gpunet:engine / " + name, "result": result,
                       "stdout": stdout, "returncode": 0})


with tempfile.TemporaryDirectory() as tmp:
    log = os.path.join(tmp, "testlog-fast.json")
    with open(log, "w") as f:
        for r in [
            record("backend_ops", "OK",
                   "# pw_direct skipped\nisa-paths: ran=portable,avx2 not-run=avx512\n3 passed, 0 failed\n"),
            record("simd", "OK", "isa-paths: ran=avx2 not-run=avx512\n"),
            # skipped: what it ran does not count
            record("cuda_preprocess-avx9", "SKIP", "isa-paths: ran=avx512 not-run=\n"),
            record("json", "OK", "1 passed, 0 failed\n"),
            record("golden", "FAIL", "isa-paths: ran=avx2 not-run=\n"),
        ]:
            f.write(r + "\n")
    cpuinfo = os.path.join(tmp, "cpuinfo")
    with open(cpuinfo, "w") as f:
        f.write("processor\t: 0\nflags\t\t: fpu sse2 avx fma avx2\n")
    p = subprocess.run([sys.executable, script, "--cpuinfo", cpuinfo, log],
                       capture_output=True, text=True)
    out = p.stdout.splitlines()
    print(p.stdout, end="")
    check(p.returncode == 1, "exit status %d with a failed test" % p.returncode)
    check(out and out[-1] == "3 passed, 1 skipped, 1 failed", "last line %r" % out[-1:])
    check(any(l.startswith("FAILED:") and "golden (FAIL)" in l for l in out),
          "no FAILED line for golden")
    # "  ran      NAME (18 columns) ..." / "  not run  NAME ..."
    lines = {l[11:29].strip(): l for l in out if l.startswith(("  ran ", "  not run "))}

    def has(key, *words):
        line = lines.get(key, "")
        check(all(w in line for w in words), "%s line %r lacks %s" % (key, line, words))

    has("portable", "ran", "1 test: backend_ops")
    has("AVX2", "ran", "3 tests: backend_ops, golden, simd")
    has("AVX-512", "not run", "the CPU lacks avx512f", "skipped by backend_ops, simd")
    check("cuda_preprocess-avx9" not in lines.get("AVX-512", ""),
          "a skipped test's path counted as run")
    has("AVX-512 BF16/VNNI", "not run", "the CPU lacks avx512_bf16 avx512_vnni", "no test runs code")
    has("AMX", "not run", "the CPU lacks amx_tile", "no test runs code")

    # a missing log is a failure, and the last line says so
    p = subprocess.run([sys.executable, script, "--cpuinfo", cpuinfo, log,
                        os.path.join(tmp, "nothing.json")], capture_output=True, text=True)
    out = p.stdout.splitlines()
    check(p.returncode == 1 and out[-1] == "3 passed, 1 skipped, 2 failed",
          "with a missing log: %d, %r" % (p.returncode, out[-1:]))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
