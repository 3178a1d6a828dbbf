#!/usr/bin/env python3
"""test_read_meta_python.py: pipelines/read_meta.py started by a Python without
PyGObject (a pyenv python3 first on PATH, issue 43 defect 15) runs itself under one that
has it, and where none has it says what to install instead of a traceback.

    test_read_meta_python.py SOURCE_ROOT PLUGIN_DIR
Exits 77 (skipped) when no Python here can import gi with Gst, or none lacks it."""
import json
import os
import subprocess
import sys
import tempfile

PROBE = "import gi; gi.require_version('Gst', '1.0'); from gi.repository import Gst"
FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def has_gi(cmd):
    return subprocess.run(cmd + ["-c", PROBE], capture_output=True).returncode == 0


def main():
    root, plugin_dir = sys.argv[1], sys.argv[2]
    script = os.path.join(root, "pipelines", "read_meta.py")
    fix = os.path.join(root, "tests", "data", "fixtures")
    # a Python without gi: this one, or one started with -S (no site-packages)
    nogi = next((c for c in ([sys.executable], [sys.executable, "-S"],
                             ["/usr/bin/python3", "-S"]) if not has_gi(c)), None)
    if nogi is None:
        print("SKIP: every Python here has gi")
        return 77
    print("a Python without gi:", " ".join(nogi))
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GST_PLUGIN_PATH_1_0=plugin_dir,
                   GST_REGISTRY_1_0=os.path.join(tmp, "registry.bin"))
        env.pop("GPUNET_PYTHON", None)
        env.pop("GPUNET_READ_META_REEXEC", None)
        # no Python with gi to be found: one sentence naming the packages, no traceback
        p = subprocess.run(nogi + [script, "x.pth.tar"], capture_output=True, text=True,
                           env=dict(env, GPUNET_PYTHON="/bin/false"), cwd=tmp)
        check(p.returncode == 3 and "python3-gi" in p.stderr
              and "gir1.2-gstreamer-1.0" in p.stderr and "Traceback" not in p.stderr,
              f"no Python with gi: a sentence ({p.returncode}: {p.stderr.strip()[-300:]})")
        if not has_gi(["/usr/bin/python3"]):
            print("SKIP the run: /usr/bin/python3 has no gi (python3-gi, gir1.2-gstreamer-1.0)")
            return 1 if FAILED else 77
        p = subprocess.run(nogi + [script, os.path.join(fix, "tiny-a", "tiny-a.pth.tar"),
                                   os.path.join(fix, "tiny-a.json"), "3"],
                           capture_output=True, text=True, env=env, cwd=tmp, timeout=120)
        recs = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        check(p.returncode == 0 and len(recs) == 3
              and recs[0]["result"]["model"] == "tiny-a",
              f"started without gi, runs under a Python with it: {p.returncode} "
              f"{len(recs)} records {p.stderr.strip()[-300:]}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
