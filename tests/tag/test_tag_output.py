#!/usr/bin/env python3
"""test_tag_output.py: gpunet-tag as a new user meets it (issue 31): it finds the
build tree's plugin with no GST_PLUGIN_PATH and an empty registry cache, its usage
line names INPUT... once, a clip with a corrupted middle is reported "partial" with
its lost frames counted, the output is locked against a second writer, --resume
writes no input twice, an output path equal to an input is refused, a FIFO input is
skipped, and a non-empty output needs --resume or --overwrite.
Usage: test_tag_output.py GPUNET_TAG FIXTURES_DIR. Exit 77 without x264enc/openh264enc."""
import fcntl
import json
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


def clean_env(tmp):
    """No plugin path at all, and a registry cache that does not exist yet."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GST_PLUGIN")}
    env["GST_REGISTRY_1_0"] = os.path.join(tmp, "fresh-registry.bin")
    return env


def gst_has(element):
    return subprocess.run(["gst-inspect-1.0", "--exists", element]).returncode == 0


def summaries(text):
    return [json.loads(l) for l in text.splitlines() if '"summary"' in l]


def main():
    tag, fixtures = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    enc = next((e for e in ("x264enc", "openh264enc") if gst_has(e)), None)
    if enc is None:
        print("SKIP: no H.264 encoder (x264enc or openh264enc)")
        return 77
    tmp = tempfile.mkdtemp(prefix="gpunet-tag-out-")
    os.chdir(tmp)
    env = clean_env(tmp)
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=100", "pattern=ball",
                    "!", "video/x-raw,width=320,height=240,framerate=25/1", "!", enc, "!",
                    "h264parse", "!", "mp4mux", "!", "filesink", "location=clip.mp4"],
                   check=True)
    # overwrite the middle 40 % of the file (mdat; the index at the end stays readable)
    data = bytearray(open("clip.mp4", "rb").read())
    n = len(data)
    for i in range(n * 3 // 10, n * 7 // 10):
        data[i] = (i * 7919) & 0xFF
    open("bad.mp4", "wb").write(data)
    open("clip2.mp4", "wb").write(open("clip.mp4", "rb").read())
    base = [tag, "-q", "--model", os.path.join(fixtures, "tiny-a.json"),
            "--checkpoint", os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar")]

    def run(args, **kw):
        return subprocess.run(base + args, capture_output=True, text=True, env=env, **kw)

    # usage line: INPUT... once
    h = subprocess.run([tag, "--help"], capture_output=True, text=True, env=env)
    usage = [l for l in h.stdout.splitlines() if "gpunet-tag [OPTION" in l]
    check(len(usage) == 1 and usage[0].count("INPUT") == 1, f"usage line {usage}")

    # the plugin of this build tree, with no environment variable
    p = run(["clip.mp4"])
    s = summaries(p.stdout)
    check(p.returncode == 0 and len(s) == 1 and s[0]["status"] == "ok"
          and s[0]["frames_decoded"] == 100 and s[0]["decode_errors"] == 0,
          f"no GST_PLUGIN_PATH: clean clip ok, 100 frames ({p.returncode}, {p.stderr.strip()})")

    # the corrupted clip: partial, with the lost frames counted
    p = run(["bad.mp4"])
    s = summaries(p.stdout)
    ok = len(s) == 1
    check(ok and s[0]["status"] == "partial", f"corrupted clip is partial: {s}")
    if ok:
        lost = max(s[0]["decode_errors"], s[0]["frames_missing"])
        check(s[0]["frames_decoded"] < 100 and s[0]["frames_decoded"] + lost >= 95,
              f"decoded {s[0]['frames_decoded']} + lost {lost} account for the 100 frames")
        check(bool(s[0]["message"]) and "lost" in s[0]["message"], "partial says why")
    check(p.returncode == 0 and "partial" in p.stderr, f"progress says partial: {p.stderr.strip()}")

    # a second writer on a locked output is refused and changes nothing
    p = run(["-o", "out.jsonl", "clip.mp4"])
    before = open("out.jsonl").read()
    with open("out.jsonl", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        p = run(["-o", "out.jsonl", "clip2.mp4"])
        p2 = run(["--resume", "-o", "out.jsonl", "clip2.mp4"])
    check(p.returncode == 2 and "another gpunet-tag" in p.stderr,
          f"second writer refused: {p.returncode} {p.stderr.strip()}")
    check(p2.returncode == 2 and "another gpunet-tag" in p2.stderr, "second --resume writer refused")
    check(open("out.jsonl").read() == before, "the locked output is untouched")
    check(not [f for f in os.listdir(".") if f.startswith(".out.jsonl.")], "no temporary file left")

    # --resume: every input once
    p = run(["--resume", "-o", "out.jsonl", "clip.mp4", "clip2.mp4", "bad.mp4"])
    p = run(["--resume", "-o", "out.jsonl", "clip.mp4", "clip2.mp4", "bad.mp4"])
    s = summaries(open("out.jsonl").read())
    names = sorted(x["input"] for x in s)
    check(p.returncode == 0 and names == ["bad.mp4", "clip.mp4", "clip2.mp4"],
          f"--resume twice: each input once {names}")
    frames = [l for l in open("out.jsonl") if '"frame"' in l]
    check(len(frames) == 200 + s[[x["input"] for x in s].index("bad.mp4")]["frames_decoded"],
          "--resume: no frame record twice")

    # a FIFO among the inputs (named, or found in a directory) is skipped with a
    # summary record, never opened: the run neither hangs nor stops (issue 43, point 3)
    os.mkdir("withfifo")
    os.mkfifo(os.path.join("withfifo", "pipe.mp4"))
    for args in (["clip.mp4", "withfifo/pipe.mp4", "clip2.mp4"],
                 ["--jobs", "2", "clip.mp4", "withfifo", "clip2.mp4"]):
        try:
            p = run(args, timeout=25)
            s = {x["input"]: x for x in summaries(p.stdout)}
            f = s.get("withfifo/pipe.mp4", {})
            check(p.returncode == 1 and f.get("status") == "error"
                  and "not a regular file" in (f.get("message") or "")
                  and s.get("clip.mp4", {}).get("status") == "ok"
                  and s.get("clip2.mp4", {}).get("status") == "ok",
                  f"a FIFO input is skipped, the others run ({' '.join(args)}): "
                  f"{p.returncode} {f} {p.stderr.strip()}")
        except subprocess.TimeoutExpired:
            check(False, f"a FIFO input is skipped ({' '.join(args)}): the run hung")

    # an output that is one of the inputs is refused and the video is intact
    size = os.path.getsize("clip2.mp4")
    p = run(["-o", "clip2.mp4", "clip2.mp4"])
    check(p.returncode == 2 and "one of the inputs" in p.stderr
          and os.path.getsize("clip2.mp4") == size, "output == input refused")

    # a non-empty output is refused without --resume or --overwrite, and stays as it
    # was; --overwrite replaces it (issue 43, point 9: a later run silently replaced it)
    keep = open("out.jsonl").read()
    p = run(["-o", "out.jsonl", "clip2.mp4"])
    check(p.returncode == 2 and "already holds records" in p.stderr and "--overwrite" in p.stderr
          and open("out.jsonl").read() == keep,
          f"a non-empty output is refused: {p.returncode} {p.stderr.strip()}")
    check(not [f for f in os.listdir(".") if f.startswith(".out.jsonl.")], "no temporary file left")
    p = run(["--overwrite", "-o", "out.jsonl", "clip2.mp4"])
    s = summaries(open("out.jsonl").read())
    check(p.returncode == 0 and [x["input"] for x in s] == ["clip2.mp4"],
          f"--overwrite replaces it: {p.returncode} {[x['input'] for x in s]}")
    open("empty.jsonl", "w").close()
    p = run(["-o", "empty.jsonl", "clip2.mp4"])
    check(p.returncode == 0 and len(summaries(open("empty.jsonl").read())) == 1,
          f"an empty output is written: {p.returncode} {p.stderr.strip()}")
    p = run(["--resume", "--overwrite", "-o", "out.jsonl", "clip2.mp4"])
    check(p.returncode == 2 and "exclude" in p.stderr, "--resume with --overwrite is refused")

    # without --resume the old output survives a run that cannot start
    keep = open("out.jsonl").read()
    p = subprocess.run([tag, "-q", "--model", "gpunet-0", "--checkpoint",
                        os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"), "--overwrite",
                        "-o", "out.jsonl", "clip.mp4"], capture_output=True, text=True, env=env)
    check(p.returncode == 2 and open("out.jsonl").read() == keep,
          f"a failed start leaves the old output ({p.returncode})")
    os.chdir("/")
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
