#!/usr/bin/env python3
"""test_scripts.py SOURCE_ROOT: the scripts a new user runs first (issue 31):
classify.sh refuses a built-in model without --checkpoint and says where to get it,
documents --frames with --input, rejects bad values; test-summary.py counts skipped
tests apart from passed ones and keeps "N passed, ..., F failed" as its last line."""
import json
import os
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def main():
    root = os.path.abspath(sys.argv[1])
    classify = os.path.join(root, "scripts", "classify.sh")

    p = subprocess.run([classify, "--model", "gpunet-0"], capture_output=True, text=True)
    check(p.returncode == 2 and "gpunet-0 needs --checkpoint" in p.stderr
          and "scripts/get-weights.sh gpunet-0" in p.stderr,
          f"gpunet-0 without --checkpoint: {p.returncode} {p.stderr.strip()}")
    check("wrong shape" not in p.stdout + p.stderr, "no shape errors instead")

    h = subprocess.run([classify, "--help"], capture_output=True, text=True)
    check(h.returncode == 0 and "--frames" in h.stdout and "--input" in h.stdout
          and "first N frames" in h.stdout, "--help says what --frames does with --input")
    p = subprocess.run([classify, "--frames", "ten"], capture_output=True, text=True)
    check(p.returncode == 2 and "positive integer" in p.stderr, "--frames ten rejected")
    p = subprocess.run([classify, "--input", "/nonexistent.mp4"], capture_output=True, text=True)
    check(p.returncode == 2 and "no such file" in p.stderr, "missing --input file rejected")

    summary = os.path.join(root, "scripts", "test-summary.py")
    with tempfile.TemporaryDirectory() as tmp:
        logs = os.path.join(tmp, "b", "meson-logs")
        os.makedirs(logs)
        with open(os.path.join(logs, "testlog.json"), "w") as f:
            for name, res in [("a", "OK"), ("b", "OK"), ("c", "SKIP"), ("d", "FAIL"),
                              ("e", "TIMEOUT")]:
                f.write(json.dumps({"name": name, "result": res}) + "\n")
        p = subprocess.run([sys.executable, summary, os.path.join(tmp, "b")],
                           capture_output=True, text=True)
        last = p.stdout.strip().splitlines()[-1]
        check(p.returncode == 1 and last == "2 passed, 1 skipped, 2 failed",
              f"summary counts skips apart: {last!r}")
        with open(os.path.join(logs, "testlog.json"), "w") as f:
            f.write(json.dumps({"name": "a", "result": "OK"}) + "\n")
            f.write(json.dumps({"name": "c", "result": "SKIP"}) + "\n")
        p = subprocess.run([sys.executable, summary, os.path.join(tmp, "b")],
                           capture_output=True, text=True)
        last = p.stdout.strip().splitlines()[-1]
        check(p.returncode == 0 and last == "1 passed, 1 skipped, 0 failed",
              f"all passed or skipped: {last!r}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
