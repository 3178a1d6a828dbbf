#!/usr/bin/env python3
"""test_scripts.py SOURCE_ROOT: the scripts a new user runs first (issue 31):
classify.sh refuses a built-in model without --checkpoint and says where to get it,
documents --frames with --input, rejects bad values; test-summary.py counts skipped
tests apart from passed ones and keeps "N passed, ..., F failed" as its last line;
install-deps.sh asks dpkg once for all its packages (issue 43 defect 16: one
dpkg-query a package made a warm classify.sh spend seconds) and installs only the
missing ones."""
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
    # a directory exists: said as it is, not "no such file"
    p = subprocess.run([classify, "--input", "/"], capture_output=True, text=True)
    check(p.returncode == 2 and "is not a regular file" in p.stderr
          and "no such file" not in p.stderr, f"a directory as --input: {p.stderr!r}")

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
    check_install_deps(root)
    return 1 if FAILED else 0


def check_install_deps(root):
    """install-deps.sh on stub dpkg-query / apt-get: one query, the missing package
    alone installed."""
    script = os.path.join(root, "scripts", "install-deps.sh")
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "calls.log")
        # dpkg-query -W -f=FORMAT PKG...: every package installed but $STUB_MISSING
        dq = os.path.join(tmp, "dpkg-query")
        with open(dq, "w") as f:
            f.write('#!/bin/sh\necho "dpkg-query $*" >> "$STUB_LOG"\nshift 2\n'
                    'for p in "$@"; do [ "$p" = "$STUB_MISSING" ] && continue\n'
                    '  echo "$p install ok installed"; done\n')
        ag = os.path.join(tmp, "apt-get")
        with open(ag, "w") as f:
            f.write('#!/bin/sh\necho "apt-get $*" >> "$STUB_LOG"\n')
        for x in (dq, ag):
            os.chmod(x, 0o755)
        for missing in ("", "libdnnl-dev"):
            open(log, "w").close()
            env = dict(os.environ, PATH=tmp + os.pathsep + os.environ["PATH"], STUB_LOG=log,
                       STUB_MISSING=missing)
            p = subprocess.run(["bash", script], capture_output=True, text=True, env=env)
            calls = open(log).read().splitlines()
            queries = [c for c in calls if c.startswith("dpkg-query")]
            installs = [c for c in calls if c.startswith("apt-get") and " install " in c]
            if not missing:
                check(p.returncode == 0 and len(queries) == 1 and not installs,
                      f"install-deps.sh, all present: one dpkg-query, no install: {calls[:3]}")
            else:
                check(p.returncode == 0 and len(queries) == 1 and len(installs) == 1
                      and installs[0].endswith(" " + missing),
                      f"install-deps.sh, {missing} missing: installs it alone: {installs}")


if __name__ == "__main__":
    sys.exit(main())
