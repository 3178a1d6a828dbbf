#!/usr/bin/env python3
"""test_gpunet_tag.py: end-to-end tests of tools/gpunet-tag on clips made at test
time (videotestsrc -> x264enc or openh264enc -> MP4 / Matroska): record counts,
pts order, segments, CSV/JSON parsing, bad inputs, --every/--fps, sharding,
--resume and SIGINT. Usage: test_gpunet_tag.py GPUNET_TAG FIXTURES_DIR.
Exit 77 (skip) without gst-launch-1.0 or an H.264 encoder."""
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PASSED = 0
FAILED = 0


def check(cond, what):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print("FAIL:", what)


def gst_has(element):
    return subprocess.run(["gst-inspect-1.0", "--exists", element]).returncode == 0


def launch(desc):
    subprocess.run(["gst-launch-1.0", "-q"] + desc.split(), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_clip(path, encoder, n, fps, pattern, mux, audio=False):
    """n frames at fps; audio=True adds an audio track as long as the video, a
    number one of that many seconds."""
    v = (f"videotestsrc num-buffers={n} pattern={pattern} ! "
         f"video/x-raw,width=320,height=240,framerate={fps}/1 ! {encoder} ! "
         f"h264parse ! {mux} name=mux ! filesink location={path}")
    if audio:
        seconds = n / fps if audio is True else audio
        v += (f" audiotestsrc num-buffers={int(seconds * 48000) // 1024} "
              "samplesperbuffer=1024 ! audio/x-raw,rate=48000,channels=1 ! "
              "audioconvert ! mux.")
    launch(v)


def decoded_frames(path):
    """Frames a plain decode of the file gives (the ground truth)."""
    out = subprocess.run(
        ["gst-launch-1.0", "-q", "uridecodebin", "uri=file://" + path,
         "caps=video/x-raw(ANY)", "expose-all-streams=false", "!",
         "checksumsink", "hash=md5"],
        capture_output=True, text=True)
    return len([l for l in out.stdout.splitlines() if l.strip()])


def run_tag(tag, base, args, **kw):
    return subprocess.run([tag] + base + args, capture_output=True, text=True,
                          **kw)


def jsonl(text):
    recs = []
    for line in text.splitlines():
        recs.append(json.loads(line))
    return recs


def by_input(recs, kind):
    d = {}
    for r in recs:
        if r["type"] == kind:
            d.setdefault(r["input"], []).append(r)
    return d


def main():
    if len(sys.argv) != 3:
        print("usage: test_gpunet_tag.py GPUNET_TAG FIXTURES_DIR")
        return 2
    tag, fixtures = os.path.abspath(sys.argv[1]), sys.argv[2]
    if not shutil.which("gst-launch-1.0") or not shutil.which("gst-inspect-1.0"):
        print("SKIP: gst-launch-1.0 not found")
        return 77
    if gst_has("x264enc"):
        enc = "x264enc speed-preset=ultrafast key-int-max=15"
    elif gst_has("openh264enc"):
        enc = "openh264enc gop-size=15"
    else:
        print("SKIP: no H.264 encoder (x264enc or openh264enc)")
        return 77
    base = ["--model", os.path.join(fixtures, "tiny-a.json"),
            "--checkpoint", os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"),
            "--top-k", "3", "--quiet", "--open-timeout", "5"]

    tmp = tempfile.mkdtemp(prefix="gpunet-tag-test-")
    os.chdir(tmp)
    os.makedirs("media/sub")
    make_clip(f"{tmp}/media/a.mp4", enc, 40, 30, "smpte", "mp4mux")
    make_clip(f"{tmp}/media/sub/b.mkv", enc, 30, 15, "ball", "matroskamux")
    make_clip(f"{tmp}/media/c.mkv", enc, 24, 24, "snow", "matroskamux",
              audio=True)
    make_clip(f"{tmp}/long.mkv", enc, 60, 30, "smpte", "matroskamux")
    make_clip(f"{tmp}/small.mkv", enc, 6, 30, "ball", "matroskamux")
    make_clip(f"{tmp}/slow.mkv", enc, 50, 10, "smpte", "matroskamux")
    with open("media/notes.txt", "w") as f:   # not taken from a directory
        f.write("not a video\n")
    with open("notvideo.mp4", "w") as f:
        f.write("this is text, not an MP4 file\n" * 20)
    data = open("slow.mkv", "rb").read()
    with open("trunc.mkv", "wb") as f:        # header says 5 s, data ends early
        f.write(data[:len(data) // 2])
    data = open("media/a.mp4", "rb").read()
    with open("trunc.mp4", "wb") as f:        # moov (at the end) missing
        f.write(data[:len(data) * 6 // 10])

    good = {"media/a.mp4": decoded_frames(f"{tmp}/media/a.mp4"),
            "media/c.mkv": decoded_frames(f"{tmp}/media/c.mkv"),
            "media/sub/b.mkv": decoded_frames(f"{tmp}/media/sub/b.mkv")}
    check(all(n > 0 for n in good.values()), f"reference decode counts {good}")
    bad = ["trunc.mkv", "trunc.mp4", "notvideo.mp4", "missing.mp4"]
    inputs = ["media", "trunc.mkv", "trunc.mp4", "notvideo.mp4", "missing.mp4"]

    # --- JSON lines, every frame ---
    p = run_tag(tag, base, inputs)
    check(p.returncode == 1, f"exit code 1 with bad inputs, got {p.returncode}: {p.stderr}")
    recs = jsonl(p.stdout)
    frames, sums = by_input(recs, "frame"), by_input(recs, "summary")
    check(sorted(sums) == sorted(list(good) + bad), f"one summary per input: {sorted(sums)}")
    check(all(len(v) == 1 for v in sums.values()), "no input summarised twice")
    for name, n in good.items():
        fr = frames.get(name, [])
        s = sums.get(name, [{}])[0]
        check(len(fr) == n, f"{name}: {len(fr)} frame records, {n} decoded")
        check([r["frame"] for r in fr] == list(range(n)), f"{name}: frame numbers")
        pts = [r["pts"] for r in fr]
        check(all(b > a for a, b in zip(pts, pts[1:])), f"{name}: pts increase")
        check(all(len(r["ids"]) == 3 and r["scores"] == sorted(r["scores"], reverse=True)
                  for r in fr), f"{name}: top-3 sorted")
        check(s.get("status") == "ok" and s.get("frames") == n and s.get("classified") == n,
              f"{name}: summary {s}")
        check(s.get("decode_fps", 0) > 0 and s.get("classify_fps", 0) > 0
              and s.get("top_labels"), f"{name}: throughput and top labels")
        check(s.get("model") == "tiny-a" and s.get("precision") == "fp32",
              f"{name}: the model and the precision the CPU ran: {s}")
    for name in bad:
        s = sums.get(name, [{}])[0]
        check(s.get("status") == "error" and s.get("message"), f"{name}: reported {s}")
    s = sums.get("missing.mp4", [{}])[0]
    check("model" in s and s["model"] is None and s.get("precision", "") is None,
          f"no record, no model or precision: {s}")
    check("truncated" in sums.get("trunc.mkv", [{}])[0].get("message", ""),
          "trunc.mkv reported as truncated")
    # order: records of an input come as one block ending with its summary
    seen_done, ok_order = set(), True
    for r in recs:
        if r["input"] in seen_done:
            ok_order = False
        if r["type"] == "summary":
            seen_done.add(r["input"])
    check(ok_order, "each input's records form one block")

    # --- truncation: a video-only input that lost its last 0.8 s of 10 s fails; video
    # with audio that outlasts it by 0.8 s is ok (the container's duration is the
    # audio's there) ---
    make_clip(f"{tmp}/ten.mkv", enc, 100, 10, "smpte", "matroskamux")
    make_clip(f"{tmp}/ten-audio.mkv", enc, 100, 10, "ball", "matroskamux", audio=10.8)
    data = open("ten.mkv", "rb").read()
    with open("ten-cut.mkv", "wb") as f:      # the header still says 10 s
        f.write(data[:len(data) * 92 // 100])
    n_cut = decoded_frames(f"{tmp}/ten-cut.mkv")
    check(88 <= n_cut <= 94, f"the cut clip keeps 8.8-9.4 s of 10 s: {n_cut} frames")
    p = run_tag(tag, base, ["ten-cut.mkv", "ten-audio.mkv", "ten.mkv"])
    sums = by_input(jsonl(p.stdout), "summary")
    s = sums.get("ten-cut.mkv", [{}])[0]
    check(s.get("status") == "error" and "truncated" in (s.get("message") or ""),
          f"a video-only clip missing its last 0.8 s is truncated: {s}")
    s = sums.get("ten-audio.mkv", [{}])[0]
    check(s.get("status") == "ok" and s.get("frames") == 100
          and s.get("container_duration", 0) > 10.5,
          f"video with a longer audio track is ok: {s}")
    s = sums.get("ten.mkv", [{}])[0]
    check(s.get("status") == "ok" and s.get("frames") == 100, f"the whole clip is ok: {s}")

    # --- CSV with segments and frames ---
    p = run_tag(tag, base, ["--format", "csv", "--segments", "--frames", "media"])
    check(p.returncode == 0, f"csv run exit 0, got {p.returncode}: {p.stderr}")
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    check(len(rows) > 0 and all(len(r) == 26 for r in rows), "csv rows have 26 columns")
    for name, n in good.items():
        fr = [r for r in rows if r["input"] == name and r["type"] == "frame"]
        seg = [r for r in rows if r["input"] == name and r["type"] == "segment"]
        s = [r for r in rows if r["input"] == name and r["type"] == "summary"]
        check(len(fr) == n and len(s) == 1, f"csv {name}: {len(fr)} frames")
        check(len(seg) >= 1, f"csv {name}: segments")
        if not seg or not fr or not s:
            continue
        check(float(seg[0]["pts"]) == float(fr[0]["pts"]) and seg[0]["frame"] == "0",
              f"csv {name}: first segment starts at the first frame")
        check(all(a["end"] == b["pts"] and a["end_frame"] == b["frame"]
                  for a, b in zip(seg, seg[1:])), f"csv {name}: segments without gaps")
        check(int(seg[-1]["end_frame"]) == n, f"csv {name}: last segment ends at the last frame")
        end = float(seg[-1]["end"])
        check(abs(end - (float(fr[0]["pts"]) + float(s[0]["duration"]))) < 1e-3,
              f"csv {name}: last segment ends at the stream end")
        check(sum(int(r["classified"]) for r in seg) == n, f"csv {name}: segment frame counts")
        # top-1 label of every frame equals its segment's label
        for r in fr:
            f = int(r["frame"])
            sg = [g for g in seg if int(g["frame"]) <= f < int(g["end_frame"])]
            if len(sg) != 1 or sg[0]["label"] != r["label"]:
                check(False, f"csv {name}: frame {f} in exactly one matching segment")
                break
        ids = fr[0]["ids"].split("|")
        check(len(ids) == 3 and len(fr[0]["scores"].split("|")) == 3, "csv top-k lists")
        check((s[0]["model"], s[0]["precision"]) == ("tiny-a", "fp32")
              and fr[0]["model"] == "" and seg[0]["precision"] == "",
              f"csv {name}: model and precision in the summary row only")

    # --- --every / --fps (segments only) ---
    p = run_tag(tag, base, ["--every", "4", "media/a.mp4"])
    n = good["media/a.mp4"]
    fr = [r for r in jsonl(p.stdout) if r["type"] == "frame"]
    check([r["frame"] for r in fr] == list(range(0, n, 4)), "--every 4 frame numbers")
    s = [r for r in jsonl(p.stdout) if r["type"] == "summary"][0]
    check(s["frames"] == n and s["classified"] == len(fr), f"--every summary {s}")
    p = run_tag(tag, base, ["--fps", "5", "media/a.mp4"])
    fr = [r for r in jsonl(p.stdout) if r["type"] == "frame"]
    want = len(range(0, n, 6))               # 30 fps clip, every 6th frame
    check(len(fr) == want, f"--fps 5: {len(fr)} records, want {want}")
    p = run_tag(tag, base, ["--segments", "media/a.mp4"])
    kinds = {r["type"] for r in jsonl(p.stdout)}
    check(kinds == {"segment", "summary"}, f"--segments alone writes no frames: {kinds}")

    # --- --batch 4 gives the records of --batch 1 (frames, pts, top-k, segments) ---
    def same_records(xs, ys, tol=1e-4):
        """Equal records, floats within tol: a batch may run other kernels (e.g. Winograd)
        than a single frame, so the last bits of a score can differ."""
        def close(x, y):
            if isinstance(x, float) or isinstance(y, float):
                return isinstance(x, (int, float)) and isinstance(y, (int, float)) \
                    and abs(x - y) <= tol
            if isinstance(x, dict):
                if not (isinstance(y, dict) and x.keys() == y.keys()):
                    return False
                if "ids" in x and "scores" in x:
                    # classes whose scores are ~0 may come in either order
                    x, y = dict(x), dict(y)
                    for key in ("ids", "labels"):
                        if key in x:
                            x[key] = [v if sc > tol else None for v, sc in zip(x[key], x["scores"])]
                            y[key] = [v if sc > tol else None for v, sc in zip(y[key], y["scores"])]
                return all(close(x[k], y[k]) for k in x)
            if isinstance(x, list):
                return isinstance(y, list) and len(x) == len(y) and \
                    all(close(a, b) for a, b in zip(x, y))
            return x == y
        return close(xs, ys)

    def records(args):
        p = run_tag(tag, base, args)
        check(p.returncode == 0, f"{args}: exit 0, got {p.returncode}: {p.stderr}")
        return [{k: v for k, v in r.items()
                 if k not in ("wall_s", "decode_fps", "classify_fps")}
                for r in jsonl(p.stdout)]
    for extra in ([], ["--every", "3"]):
        one = records(["--batch", "1", "--segments", "--frames"] + extra + ["media/a.mp4"])
        four = records(["--batch", "4", "--segments", "--frames"] + extra + ["media/a.mp4"])
        check(len(one) > 0 and same_records(one, four),
              f"--batch 4 {extra}: same records as --batch 1")
    check(run_tag(tag, base, ["--batch", "65", "media/a.mp4"]).returncode == 2,
          "--batch 65 is exit 2")
    # numbers no run can mean: refused with their range, not a GLib warning and the
    # default (--threads), the default (NaN, 0) or every input failed at once (1e300)
    for bad, said in ((["--threads", "99999"], "--threads 0..1024"),
                      (["--fps", "nan"], "--fps >= 0"),
                      (["--stall-timeout", "1e300"], "at most 1000000"),
                      (["--stall-timeout", "nan"], "--stall-timeout and --open-timeout"),
                      (["--open-timeout", "0"], "more than 0 seconds")):
        p = run_tag(tag, base, bad + ["media/a.mp4"])
        check(p.returncode == 2 and said in p.stderr and "GLib" not in p.stderr
              and p.stdout == "", f"{bad}: exit 2 with the range: {p.returncode} {p.stderr!r}")

    # --- --jobs: inputs at once into one shared engine, the same output ---
    clips = ["media/a.mp4", "media/sub/b.mkv", "media/c.mkv", "small.mkv",
             "notvideo.mp4"]
    def records_rc(args):
        p = run_tag(tag, base, args)
        return p.returncode, [{k: v for k, v in r.items()
                               if k not in ("wall_s", "decode_fps", "classify_fps")}
                              for r in jsonl(p.stdout)]
    rc1, one = records_rc(["--jobs", "1", "--segments", "--frames"] + clips)
    rc3, three = records_rc(["--jobs", "3", "--batch", "4", "--segments",
                             "--frames"] + clips)
    check(rc1 == 1 and rc3 == 1, f"--jobs: exit 1 (one bad input), got {rc1}, {rc3}")
    # batch 4 may plan other kernels than batch 1 (last bits of a score): same_records
    check(len(one) > 0 and same_records(one, three),
          "--jobs 3 --batch 4: the records of --jobs 1")
    check(run_tag(tag, base, ["--jobs", "0", "media/a.mp4"]).returncode == 2,
          "--jobs 0 is exit 2")

    # --- sharding ---
    many = []
    for i in range(9):
        os.makedirs(f"shard/d{i % 3}", exist_ok=True)
        dst = f"shard/d{i % 3}/clip{i}.mkv"
        shutil.copy("small.mkv", dst)
        many.append(dst)
    union = []
    for i in range(3):
        p = run_tag(tag, base, ["--shard", f"{i}/3", "-o", f"shard{i}.jsonl", "shard"])
        check(p.returncode == 0, f"shard {i} exit 0: {p.stderr}")
        recs = jsonl(open(f"shard{i}.jsonl").read())
        names = [r["input"] for r in recs if r["type"] == "summary"]
        lst = run_tag(tag, [], ["--list", "--shard", f"{i}/3", "shard"]).stdout.split()
        check(sorted(names) == sorted(lst), f"shard {i}: --list matches the run")
        union += names
    check(sorted(union) == sorted(many), "shards cover every input exactly once")

    # --- resume from a partial file (cut inside the third input's block) ---
    full = run_tag(tag, base, ["-o", "full.jsonl"] + many[:5])
    lines = open("full.jsonl").read().splitlines(keepends=True)
    ends = [i for i, l in enumerate(lines) if '"summary"' in l]
    cut = lines[:ends[1] + 1] + lines[ends[1] + 1:ends[2] - 3] + [lines[ends[2] - 3][:20]]
    open("partial.jsonl", "w").write("".join(cut))
    p = run_tag(tag, base, ["--resume", "-o", "partial.jsonl"] + many[:5])
    check(p.returncode == 0, f"resume exit 0: {p.stderr}")
    recs = jsonl(open("partial.jsonl").read())
    check(sorted(r["input"] for r in recs if r["type"] == "summary") == sorted(many[:5]),
          "resume: every input once")
    check(len([r for r in recs if r["type"] == "frame"]) ==
          5 * decoded_frames(f"{tmp}/small.mkv"), "resume: no duplicated frame records")
    check(len(recs) == len(jsonl(open("full.jsonl").read())), "resume: same record count as one run")

    # --- resume of a CSV file in an older layout (24 columns, no model and
    # precision) continues in that layout ---
    old_header = ("type,input,frame,end_frame,pts,end,label_id,label,score,ids,labels,"
                  "scores,frames,classified,duration,container_duration,wall_s,"
                  "decode_fps,classify_fps,top_labels,status,message,decode_errors,"
                  "frames_missing\n")
    run_tag(tag, base, ["--format", "csv", "--segments", "-o", "new.csv"] + many[:2])
    rows = list(csv.reader(open("new.csv")))
    check(len(rows[0]) == 26, f"a new CSV file has 26 columns: {rows[0]}")
    with open("old.csv", "w") as f:
        f.write(old_header)
        f.writelines(",".join(r[:24]) + "\n" for r in rows[1:]
                     if r[1] == rows[1][1])     # the first input's rows
    p = run_tag(tag, base, ["--resume", "--format", "csv", "--segments", "-o", "old.csv"]
                + many[:2])
    rows = list(csv.reader(open("old.csv")))
    check(p.returncode == 0 and all(len(r) == 24 for r in rows)
          and sorted(r[1] for r in rows if r[0] == "summary") == sorted(many[:2]),
          f"resume of a 24-column file: {p.returncode} {p.stderr} "
          f"{sorted(set(len(r) for r in rows))}")

    # --- --resume --retry-failed redoes failed inputs, keeps one summary each ---
    run_tag(tag, base, ["-o", "mixed.jsonl", "media/a.mp4", "missing.mp4"])
    open("missing.mp4", "wb").write(open("media/a.mp4", "rb").read())
    p = run_tag(tag, base, ["--resume", "--retry-failed", "-o", "mixed.jsonl",
                            "media/a.mp4", "missing.mp4"])
    sums = [r for r in jsonl(open("mixed.jsonl").read()) if r["type"] == "summary"]
    check(p.returncode == 0 and sorted((s["input"], s["status"]) for s in sums)
          == [("media/a.mp4", "ok"), ("missing.mp4", "ok")], f"retry-failed: {sums}")
    os.unlink("missing.mp4")

    # --- SIGINT mid-run leaves a valid file; --resume completes it ---
    longs = []
    for i in range(4):
        shutil.copy("long.mkv", f"long{i}.mkv")
        longs.append(f"long{i}.mkv")
    proc = subprocess.Popen([tag] + base + ["-o", "int.jsonl"] + longs,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists("int.jsonl") and '"summary"' in open("int.jsonl").read():
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(60)
    text = open("int.jsonl").read()
    check(rc in (130, 0), f"SIGINT exit code {rc}")
    check(text.endswith("\n") and all(json.loads(l) for l in text.splitlines()),
          "interrupted output is whole JSON lines")
    done_before = [r["input"] for r in jsonl(text) if r["type"] == "summary"]
    check(rc == 0 or len(done_before) < len(longs), f"stopped early ({len(done_before)} done)")
    # --jobs 3, interrupted while three inputs of 1800 frames run: the line names every
    # input not written that ran, not only the first (records go out in input order).
    # A run that ends before the signal is tried again with the signal sooner.
    make_clip("longer.mkv", enc, 1800, 30, "smpte", "matroskamux")
    longer = []
    for i in range(3):
        shutil.copy("longer.mkv", f"longer{i}.mkv")
        longer.append(f"longer{i}.mkv")
    for wait in (0.8, 0.4, 0.2):
        if os.path.exists("int3.jsonl"):
            os.unlink("int3.jsonl")
        proc = subprocess.Popen([tag] + base + ["--jobs", "3", "-o", "int3.jsonl"] + longer,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(wait)
        proc.send_signal(signal.SIGINT)
        err3 = proc.communicate(timeout=60)[1]
        if proc.returncode != 0:
            break
    line = next((l for l in err3.splitlines() if "interrupted: " in l), "")
    written = [r["input"] for r in jsonl(open("int3.jsonl").read())
               if r["type"] == "summary"] if os.path.exists("int3.jsonl") else []
    unwritten = [n for n in longer if n not in written]
    check(proc.returncode == 130 and len(unwritten) >= 2
          and all(f"'{n}'" in line for n in unwritten),
          f"--jobs 3 interrupted: the line names {unwritten}: {line!r} (rc {proc.returncode})")
    p = run_tag(tag, base, ["--resume", "-o", "int.jsonl"] + longs)
    recs = jsonl(open("int.jsonl").read())
    names = [r["input"] for r in recs if r["type"] == "summary"]
    nlong = decoded_frames(f"{tmp}/long.mkv")
    check(p.returncode == 0 and sorted(names) == sorted(longs), "resume after SIGINT: all once")
    check(len([r for r in recs if r["type"] == "frame"]) == nlong * len(longs),
          "resume after SIGINT: no duplicated frames")

    # --- usage errors ---
    check(run_tag(tag, base, ["--shard", "3/3", "media"]).returncode == 2, "bad --shard is exit 2")
    check(run_tag(tag, [], ["media"]).returncode == 2, "missing --checkpoint is exit 2")
    p = run_tag(tag, ["--checkpoint", "/nonexistent.pth.tar"], ["media/a.mp4"])
    check(p.returncode == 2 and "nonexistent" in p.stderr, "unloadable model is exit 2")

    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
