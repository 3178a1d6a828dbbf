#!/usr/bin/env python3
"""test_get_weights.py GET_WEIGHTS GPUNET_RUN FIXTURES: scripts/get-weights.sh on a
local zip shaped like NVIDIA's (a folder holding the .pth.tar) with the fixture
checkpoint: extracted, checked with gpunet-run against the fixture's JSON, command
lines printed; checked against the wrong architecture it fails; with no network
(an unreachable address) it says so in one sentence; unknown names are refused."""
import os
import subprocess
import sys
import tempfile
import zipfile

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def main():
    script, run, fixtures = (os.path.abspath(a) for a in sys.argv[1:4])
    env = dict(os.environ, GPUNET_RUN=run)
    arch = os.path.join(fixtures, "tiny-a.json")
    # --help prints the opening comment, all of it and nothing else (issue 43, point 14:
    # it printed "set -euo pipefail")
    p = subprocess.run([script, "--help"], capture_output=True, text=True, env=env)
    lines = open(script).read().splitlines()
    n = next(i for i, l in enumerate(lines) if i > 0 and not l.startswith("#"))
    want = [l[2:] if l.startswith("# ") else l[1:] for l in lines[1:n]]
    check(p.returncode == 0 and p.stdout.splitlines() == want,
          f"--help is the opening comment: {p.stdout.splitlines()[-2:]}")
    with tempfile.TemporaryDirectory() as tmp:
        z = os.path.join(tmp, "gpunet_0_pyt_ckpt.zip")
        with zipfile.ZipFile(z, "w") as f:
            f.write(os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"), "gpunet_0/0.65ms.pth.tar")
        out = os.path.join(tmp, "w")
        p = subprocess.run([script, "--from-zip", z, "--arch", arch, "--dir", out, "gpunet-0"],
                           capture_output=True, text=True, env=env)
        ckpt = os.path.join(out, "0.65ms.pth.tar")
        check(p.returncode == 0 and os.path.isfile(ckpt), f"extracted: {p.returncode} {p.stderr}")
        check(open(ckpt, "rb").read() ==
              open(os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"), "rb").read(),
              "the checkpoint is the zip's")
        check("loads as" in p.stdout, "checked with gpunet-run")
        check(f"--model {arch} --checkpoint {ckpt}" in p.stdout
              and "--image" in p.stdout, "prints the command lines that use it")
        check(sorted(os.listdir(out)) == ["0.65ms.pth.tar"], f"nothing else left: {os.listdir(out)}")

        p = subprocess.run([script, "--from-zip", z, "--dir", out, "0.65ms"],
                           capture_output=True, text=True, env=env)
        check(p.returncode == 1 and "does not load as gpunet-0" in p.stderr,
              "the fixture's weights do not pass as gpunet-0")

        p = subprocess.run([script, "--dir", os.path.join(tmp, "n"), "gpunet-d2"],
                           capture_output=True, text=True,
                           env=dict(env, GPUNET_NGC_BASE="http://127.0.0.1:9"))
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 1 and len(lines) == 1 and "no network" in lines[0]
              and "--from-zip" in lines[0], f"no network: one sentence: {lines}")
        check("gpunet_d2_pyt_ckpt/versions/21.12.0_amp/zip" in p.stdout + p.stderr,
              "gpunet-d2's NGC address")
        check(not os.path.exists(os.path.join(tmp, "n", "gpunet_d2_pyt_ckpt.zip.part")),
              "no partial download left")

        p = subprocess.run([script, "resnet50"], capture_output=True, text=True, env=env)
        check(p.returncode == 2 and "gpunet-d2" in p.stderr, "unknown name refused, names listed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
