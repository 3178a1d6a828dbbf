#!/usr/bin/env python3
"""test_convert_inplace.py GPUNET_CONVERT GPUNET_RUN FIXTURES: gpunet-convert with
--output equal to its --checkpoint (issue 31, point 12) replaces the file with a
safetensors copy of the same weights: same logits, no temporary file left; a
failing conversion leaves the existing output untouched. An output that is not a
regular file (a FIFO here; /dev/null alike) is written in place, never renamed over.
A FIFO given as the checkpoint or the architecture is refused without blocking."""
import os
import stat
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
        # a FIFO as --output: written through, still a FIFO afterwards
        for name, cmd in (("gpunet-run", [run, "--model", arch, "--checkpoint", ckpt, "--batch",
                                          "2", "--input", os.path.join(fixtures, "tiny-a",
                                                                       "input.bin")]),
                          ("gpunet-convert", [convert, "--checkpoint", ckpt])):
            fifo = os.path.join(tmp, "fifo")
            os.mkfifo(fifo)
            got = os.path.join(tmp, "through-fifo")
            with open(got, "wb") as sink:
                reader = subprocess.Popen(["cat", fifo], stdout=sink)
                p = subprocess.run(cmd + ["--output", fifo], capture_output=True, text=True,
                                   timeout=30)
                reader.wait(timeout=30)
            data = open(got, "rb").read()
            os.unlink(got)
            want = 2 * 16 * 4 if name == "gpunet-run" else 1000
            check(p.returncode == 0 and len(data) >= want and stat.S_ISFIFO(os.stat(fifo).st_mode),
                  f"{name} --output FIFO: written in place ({len(data)} bytes) {p.stderr.strip()}")
            os.unlink(fifo)
        # a write that fails into a FIFO or a device (/dev/full) leaves the path there:
        # the tool removes only what it created (issue 43, point 4; as root,
        # --output /dev/full used to delete /dev/full)
        fifo = os.path.join(tmp, "short.fifo")
        os.mkfifo(fifo)
        reader = subprocess.Popen(["head", "-c", "100", fifo], stdout=subprocess.DEVNULL)
        # SIGPIPE ignored (not restored for the child): the write fails with EPIPE
        p = subprocess.run([convert, "--checkpoint", ckpt, "--output", fifo],
                           capture_output=True, text=True, timeout=30, restore_signals=False)
        reader.wait(timeout=30)
        check(p.returncode == 1 and os.path.exists(fifo) and stat.S_ISFIFO(os.stat(fifo).st_mode),
              f"a failed write into a FIFO keeps the FIFO: {p.returncode} {p.stderr.strip()}")
        if os.path.lexists(fifo):
            os.unlink(fifo)
        full = os.path.join(tmp, "full")
        try:
            os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))   # what /dev/full is
        except OSError:
            full = None
        if full:
            p = subprocess.run([convert, "--checkpoint", ckpt, "--output", full],
                               capture_output=True, text=True, timeout=30)
            check(p.returncode == 1 and "No space left" in p.stderr and os.path.exists(full),
                  f"a failed write into a device keeps the device: {p.returncode} "
                  f"{p.stderr.strip()}")
            if os.path.lexists(full):
                os.unlink(full)
        else:
            print("note: cannot make a device node here; the /dev/full case is not run")
        # a FIFO as --checkpoint or --random architecture: refused at once (issue 43,
        # point 1: open() of a FIFO blocks until a writer comes), nothing written
        fifo = os.path.join(tmp, "weights.fifo")
        os.mkfifo(fifo)
        out = os.path.join(tmp, "from-fifo.safetensors")
        for opt in ("--checkpoint", "--random"):
            try:
                p = subprocess.run([convert, opt, fifo, "--output", out], capture_output=True,
                                   text=True, timeout=20)
                check(p.returncode == 1 and "not a regular file" in p.stderr
                      and fifo in p.stderr and not os.path.exists(out),
                      f"convert {opt} FIFO refused: {p.returncode} {p.stderr.strip()}")
            except subprocess.TimeoutExpired:
                check(False, f"convert {opt} FIFO refused (it hung in open())")
        os.unlink(fifo)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
