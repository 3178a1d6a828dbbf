#!/usr/bin/env python3
"""test_example_args.py EXAMPLE_APP READ_META FIXTURES: the two metadata readers of
README step 6 (pipelines/example-app.c and pipelines/read_meta.py) take NUM_FRAMES as
a positive whole number.  "-5" went into videotestsrc's num-buffers as -1, so the
pipeline never ended; "abc" gave a GStreamer parse error naming num-buffers.  Each is
now refused with exit 2 and one sentence, and "3" still prints three frames.
read_meta.py runs under /usr/bin/python3 (Debian's python3-gi); without gi there its
half is left out with a note."""
import subprocess
import sys

app, read_meta, fix = sys.argv[1:4]
ckpt, arch = f"{fix}/tiny-a/tiny-a.pth.tar", f"{fix}/tiny-a.json"
FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


readers = [("example-app", [app])]
if subprocess.run(["/usr/bin/python3", "-c", "import gi; gi.require_version('Gst', '1.0')"],
                  capture_output=True).returncode == 0:
    readers.append(("read_meta.py", ["/usr/bin/python3", read_meta]))
else:
    print("note: /usr/bin/python3 has no gi: read_meta.py is not run")

for name, cmd in readers:
    for bad in ("-5", "abc", "0", "99999999999", "3 ! fakesink"):
        try:
            p = subprocess.run(cmd + [ckpt, arch, bad], capture_output=True, text=True,
                               timeout=30)
            check(p.returncode == 2 and f"NUM_FRAMES needs a positive integer, got '{bad}'"
                  in p.stderr and p.stdout == "",
                  f"{name} NUM_FRAMES {bad!r}: exit {p.returncode}, {p.stderr.strip()!r}")
        except subprocess.TimeoutExpired:
            check(False, f"{name} NUM_FRAMES {bad!r}: still running after 30 s")
    p = subprocess.run(cmd + [ckpt, arch, "3"], capture_output=True, text=True, timeout=60)
    lines = p.stdout.strip().splitlines()
    check(p.returncode == 0 and (lines[-1:] == ["3 frames"] or len(lines) == 3),
          f"{name} NUM_FRAMES 3: exit {p.returncode}, {lines[-1:]}")
sys.exit(1 if FAILED else 0)
