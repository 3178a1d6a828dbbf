#!/usr/bin/env python3
"""test_convert_inplace.py GPUNET_CONVERT GPUNET_RUN FIXTURES: gpunet-convert with
--output equal to its --checkpoint (issue 31, point 12) replaces the file with a
safetensors copy of the same weights: same logits, no temporary file left; a
failing conversion leaves the existing output untouched."""
import os
import shutil
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
    convert, run, fixtures = (os.path.abspath(a) for a in sys.argv[1:4])
    arch = os.path.join(fixtures, "tiny-a.json")
    ckpt = os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar")
    with tempfile.TemporaryDirectory() as tmp:
        w = os.path.join(tmp, "w.pth.tar")
        shutil.copy(ckpt, w)

        def logits(weights, out):
            return subprocess.run([run, "--model", arch, "--checkpoint", weights, "--batch", "2",
                                   "--input", os.path.join(fixtures, "tiny-a", "input.bin"),
                                   "--output", out, "--threads", "1"],
                                  capture_output=True, text=True)
        p = logits(w, os.path.join(tmp, "before.bin"))
        check(p.returncode == 0, f"fixture runs: {p.stderr.strip()}")
        p = subprocess.run([convert, "--checkpoint", w, "--output", w], capture_output=True,
                           text=True)
        check(p.returncode == 0, f"convert in place exits 0: {p.returncode} {p.stderr.strip()}")
        check(open(w, "rb").read(8) != open(ckpt, "rb").read(8), "the file is now safetensors")
        p = logits(w, os.path.join(tmp, "after.bin"))
        check(p.returncode == 0 and open(os.path.join(tmp, "before.bin"), "rb").read()
              == open(os.path.join(tmp, "after.bin"), "rb").read(),
              f"same logits after the in-place conversion: {p.stderr.strip()}")
        check(sorted(os.listdir(tmp)) == ["after.bin", "before.bin", "w.pth.tar"],
              f"no temporary file left: {sorted(os.listdir(tmp))}")
        # a conversion that fails keeps the old output
        keep = open(w, "rb").read()
        p = subprocess.run([convert, "--random", "no-such-model", "--output", w],
                           capture_output=True, text=True)
        check(p.returncode != 0 and open(w, "rb").read() == keep
              and sorted(os.listdir(tmp)) == ["after.bin", "before.bin", "w.pth.tar"],
              "a failed conversion leaves the output as it was")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
