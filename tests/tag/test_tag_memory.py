#!/usr/bin/env python3
"""test_tag_memory.py: where gpunet-tag decodes to.  With --backend cpu: system memory,
no note.  With --backend auto: one note saying where frames are decoded and why; on a
host without a CUDA GPU or nvcodec that is system memory, and the records equal the CPU
path's bit for bit.  With --backend cuda and nvcodec present (a GPU host): the caps
negotiated on gpunetclassify's sink pad carry memory:CUDAMemory and the records equal the
CPU path's (top-1 equal, scores within 1e-3, fp32).  The CPU checks always run; the GPU
part is skipped (exit 77 once the rest passed) without nvh264dec.
Usage: test_tag_memory.py GPUNET_TAG FIXTURES_DIR GPU_CHECK_LIB."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

PASSED = FAILED = 0


def check(cond, what):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print("FAIL:", what)


def gst_has(element):
    return subprocess.run(["gst-inspect-1.0", "--exists", element]).returncode == 0


def notes(stderr):
    return [l for l in stderr.splitlines() if l.startswith("gpunet-tag: decoding into")]


def caps_lines(stderr):
    return [l for l in stderr.splitlines() if "gpunetclassify's input caps:" in l]


def main():
    if len(sys.argv) != 4:
        print("usage: test_tag_memory.py GPUNET_TAG FIXTURES_DIR GPU_CHECK_LIB")
        return 2
    tag, fixtures = os.path.abspath(sys.argv[1]), sys.argv[2]
    spec = importlib.util.spec_from_file_location("gpu_check_lib", sys.argv[3])
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    if not shutil.which("gst-launch-1.0") or not shutil.which("gst-inspect-1.0"):
        print("SKIP: gst-launch-1.0 not found")
        return 77
    enc = next((e for e in ("x264enc speed-preset=ultrafast key-int-max=15",
                            "openh264enc gop-size=15") if gst_has(e.split()[0])), None)
    if enc is None:
        print("SKIP: no H.264 encoder (x264enc or openh264enc)")
        return 77
    tmp = tempfile.mkdtemp(prefix="gpunet-tag-memory-")
    clip = os.path.join(tmp, "clip.mp4")
    subprocess.run(["gst-launch-1.0", "-q"] + (
        "videotestsrc num-buffers=20 pattern=ball ! video/x-raw,width=320,height=240,"
        f"framerate=20/1 ! {enc} ! h264parse ! mp4mux ! filesink location={clip}").split(),
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = [tag, "--model", os.path.join(fixtures, "tiny-a.json"),
            "--checkpoint", os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"),
            "--top-k", "3", "--show-caps", "--segments", "--frames", "--open-timeout", "10"]

    def run(name, args):
        out = os.path.join(tmp, name + ".jsonl")
        p = subprocess.run(base + args + ["--output", out, clip], capture_output=True,
                           text=True)
        return p, out

    # --- the CPU path: system memory, no note ---
    cpu, cpu_out = run("cpu", ["--backend", "cpu"])
    check(cpu.returncode == 0, f"--backend cpu: exit 0, got {cpu.returncode}: {cpu.stderr}")
    check(notes(cpu.stderr) == [], f"--backend cpu prints no memory note: {notes(cpu.stderr)}")
    caps = caps_lines(cpu.stderr)
    check(len(caps) == 1 and "video/x-raw" in caps[0] and "CUDAMemory" not in caps[0],
          f"--backend cpu: one system-memory caps line: {caps}")
    check(len(caps) == 1 and "(decoder " in caps[0] and "(decoder none)" not in caps[0],
          f"the caps line names the decoder: {caps}")

    # --- auto: a note saying where and why; here (no GPU) system memory, same records ---
    auto, auto_out = run("auto", ["--backend", "auto", "--precision", "fp32"])
    check(auto.returncode == 0, f"--backend auto: exit 0, got {auto.returncode}: {auto.stderr}")
    n = notes(auto.stderr)
    check(len(n) == 1, f"--backend auto prints one memory note: {auto.stderr}")
    caps = caps_lines(auto.stderr)
    if n and "CUDA memory" in n[0]:
        check(len(caps) == 1 and "memory:CUDAMemory" in caps[0],
              f"auto on a GPU: CUDA caps negotiated: {caps}")
        bad = lib.compare_records(lib.load_jsonl(auto_out), lib.load_jsonl(cpu_out), 1e-3)
        check(bad == [], f"auto on a GPU: records as the CPU path's: {bad[:3]}")
    else:
        check(bool(n) and n[0].startswith("gpunet-tag: decoding into system memory: ")
              and len(n[0]) > 60, f"the fallback note says why: {n}")
        check(len(caps) == 1 and "CUDAMemory" not in caps[0],
              f"auto without CUDA: system-memory caps: {caps}")
        a = open(auto_out).read().splitlines()
        c = open(cpu_out).read().splitlines()
        strip = lambda ls: [l for l in ls if '"type":"summary"' not in l]
        check(len(a) > 20 and strip(a) == strip(c),
              "auto without CUDA: frame and segment records equal the CPU path's")
        check(lib.compare_records(lib.load_jsonl(auto_out), lib.load_jsonl(cpu_out), 0) == [],
              "auto without CUDA: summaries agree (status, frames)")
    # the comparison itself can fail: a changed top-1 and a changed score are caught
    recs = lib.load_jsonl(cpu_out)
    moved = [dict(r) for r in recs]
    f = next(i for i, r in enumerate(moved) if r["type"] == "frame")
    moved[f]["scores"] = [s + 0.01 for s in moved[f]["scores"]]
    check(len(lib.compare_records(recs, moved, 1e-3)) == 1, "a score 0.01 off is a difference")
    moved[f]["ids"] = [moved[f]["ids"][1], moved[f]["ids"][0]] + moved[f]["ids"][2:]
    check(len(lib.compare_records(recs, moved, 1e-3)) == 1, "a swapped top-1 is a difference")

    bad = subprocess.run(base + ["--precision", "fp64", clip], capture_output=True, text=True)
    check(bad.returncode == 2 and "--precision must be auto, fp32, fp16, bf16 or int8" in bad.stderr,
          f"--precision fp64 is a usage error: {bad.returncode} {bad.stderr[:200]}")

    # --- the CUDA path (a GPU host with nvcodec) ---
    gpu_ran = False
    if gst_has("nvh264dec"):
        gpu, gpu_out = run("cuda", ["--backend", "cuda", "--precision", "fp32"])
        check(gpu.returncode == 0, f"--backend cuda: exit 0, got {gpu.returncode}: {gpu.stderr}")
        n, caps = notes(gpu.stderr), caps_lines(gpu.stderr)
        check(len(n) == 1 and "decoding into CUDA memory" in n[0], f"CUDA memory note: {n}")
        check(len(caps) == 1 and "video/x-raw(memory:CUDAMemory)" in caps[0],
              f"--backend cuda negotiates CUDA memory: {caps}")
        check(len(caps) == 1 and "(decoder nvh264dec)" in caps[0],
              f"--backend cuda decodes with NVDEC (ranked above the software decoders): {caps}")
        if gpu.returncode == 0:
            bad = lib.compare_records(lib.load_jsonl(gpu_out), lib.load_jsonl(cpu_out), 1e-3)
            check(bad == [], f"GPU records equal the CPU path's: {bad[:3]}")
        gpu_ran = True
    else:
        print("GPU part skipped: no nvh264dec (no NVIDIA GPU/driver, or no nvcodec)")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{PASSED} passed, {FAILED} failed")
    if FAILED:
        return 1
    return 0 if gpu_ran else 77


if __name__ == "__main__":
    sys.exit(main())
