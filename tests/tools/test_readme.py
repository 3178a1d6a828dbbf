#!/usr/bin/env python3
"""test_readme.py SOURCE_ROOT BUILD_ROOT: runs, as written, the README's commands that
need no download (those on the test fixture, and the gst-launch lines that make their
inputs), in a scratch folder that mirrors a fresh clone (build/, tests/, pipelines/,
scripts/ linked), with no GST_PLUGIN_PATH. Each must exit 0 (issue 31: the README's
gpunet-tag command failed as written)."""
import os
import re
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def commands(readme):
    """Indented code lines, continuation backslashes joined."""
    out, cur = [], ""
    for line in open(readme):
        if not line.startswith("    ") or not line.strip():
            cur = ""
            continue
        text = line[4:].rstrip("\n")
        if cur:
            text = cur + " " + text.strip()
        if text.endswith("\\"):
            cur = text[:-1].rstrip()
            continue
        cur = ""
        out.append(text.strip())
    return out


def main():
    src, build = (os.path.abspath(a) for a in sys.argv[1:3])
    wanted = [c for c in commands(os.path.join(src, "README.md"))
              if "tiny-a" in c or re.match(r"^(mkdir -p videos && )?gst-launch-1.0 -q videotestsrc", c)]
    check(any(c.startswith("build/tools/gpunet-tag") for c in wanted), "the README has a gpunet-tag command on the fixture")
    check(any("--image" in c for c in wanted), "the README has a gpunet-run --image command on the fixture")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GST_PLUGIN")}
    with tempfile.TemporaryDirectory() as tmp:
        env["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry.bin")
        os.symlink(build, os.path.join(tmp, "build"))
        for d in ("tests", "pipelines", "scripts"):
            os.symlink(os.path.join(src, d), os.path.join(tmp, d))
        for c in wanted:
            p = subprocess.run(["bash", "-c", c], cwd=tmp, env=env, capture_output=True, text=True,
                               timeout=60)
            check(p.returncode == 0, f"{c[:90]}: exit {p.returncode} {p.stderr.strip()[-300:]}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
