#!/usr/bin/env python3
"""test_gpu_check.py: what of scripts/gpu-check.sh runs without a GPU.  The script parses
(bash -n); with no GPU it says "no GPU: nothing to check" and exits 77; with a GPU listed
but no usable CUDA backend it exits 1 naming the cause; its comparisons
(scripts/gpu_check_lib.py) pass and fail on canned inputs: the latency table of the real
docs/cuda.md (a model 10 % slower is flagged), gpunet-tag records, element JSON lines, flat
and growing memory samples, the summary table; and the element helper
(tools/gpunet-element-check) runs its region and state-cycle checks on system memory with
the CPU backend.
Usage: test_gpu_check.py SOURCE_ROOT BUILD_DIR"""
import importlib.util
import json
import os
import stat
import subprocess
import sys
import tempfile

root, build = sys.argv[1], os.path.abspath(sys.argv[2])
script = os.path.join(root, "scripts", "gpu-check.sh")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


spec = importlib.util.spec_from_file_location("gpu_check_lib",
                                              os.path.join(root, "scripts", "gpu_check_lib.py"))
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)
tmp = tempfile.mkdtemp(prefix="gpu-check-test-")

# --- the script itself ---
check(subprocess.run(["bash", "-n", script]).returncode == 0, "bash -n gpu-check.sh")
env = dict(os.environ, NVIDIA_SMI="false")
p = subprocess.run(["bash", script, build, os.path.join(tmp, "logs")], capture_output=True,
                   text=True, env=env)
check(p.returncode == 77 and "no GPU: nothing to check" in p.stdout,
      f"no GPU: exit 77 and the sentence: {p.returncode} {p.stdout!r} {p.stderr!r}")
p = subprocess.run(["bash", script, build, os.path.join(tmp, "logs")], capture_output=True,
                   text=True, env=dict(env, SOAK_MIN="0"))
check(p.returncode == 2 and "SOAK_MIN must be a whole number" in p.stdout,
      f"SOAK_MIN=0 is refused with a sentence: {p.returncode} {p.stdout!r}")
fake = os.path.join(tmp, "fake-smi")
with open(fake, "w") as f:
    f.write("#!/bin/sh\necho 'GPU 0: Fake GPU (UUID: GPU-0)'\n")
os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
cuda_runs = subprocess.run([os.path.join(build, "tools", "gpunet-bench"), "--model", "gpunet-p0",
                            "--backend", "cuda", "--runs", "1", "--warmup", "0",
                            "--preprocess-runs", "0"], capture_output=True).returncode == 0
if not cuda_runs:
    p = subprocess.run(["bash", script, build, os.path.join(tmp, "logs")], capture_output=True,
                       text=True, env=dict(os.environ, NVIDIA_SMI=fake))
    check(p.returncode == 1 and "the CUDA backend cannot run on it" in p.stdout,
          f"a GPU listed, CUDA unusable: exit 1 with why: {p.returncode} {p.stdout[-300:]!r}")
p = subprocess.run(["bash", script, os.path.join(tmp, "nobuild")], capture_output=True,
                   text=True, env=dict(os.environ, NVIDIA_SMI=fake))
check(p.returncode == 2 and "build first" in p.stdout, f"no build: exit 2: {p.stdout!r}")

# --- the plumbing of QUICK=1 with stub tools: every step of the short set gets a row ---
stub = os.path.join(tmp, "stub")
os.makedirs(os.path.join(stub, "build", "tools"))
os.makedirs(os.path.join(stub, "bin"))
stubs = {
    # a latency line for bench and bench-fused, thread lines for cpu-threads
    "build/tools/gpunet-bench": "case \"$*\" in *--threads*) for t in 1 2 4 8 16; do "
    "echo \"model=stub batch=1 threads=$t median_ms=1.0 min_ms=1.0\"; done ;; "
    "*) echo 'gpu_median_ms=0.400 (stub)' ;; esac",
    "build/tools/gpunet-selftest": "echo 'stub self-test: PASS'",
    "build/tools/gpunet-convert": "while [ $# -gt 0 ]; do [ \"$1\" = --output ] && : > \"$2\"; shift; done",
    "build/tools/gpunet-element-check": "echo 'detail: ok: stub'",
    # no GStreamer element exists: no clip is made, the decoder steps skip
    "bin/gst-inspect-1.0": "exit 1",
    "bin/gst-launch-1.0": "exit 1",
}
for name, body in stubs.items():
    path = os.path.join(stub, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
quick = subprocess.run(["bash", "-c", "source <(sed -n '/^QUICK_STEPS=/,/\"$/p' \"$0\"); "
                        "echo $QUICK_STEPS", script], capture_output=True, text=True).stdout.split()
check(len(quick) >= 10 and "selftest-quick" in quick and "bench-fused" in quick,
      f"QUICK_STEPS read from the script: {quick}")
p = subprocess.run(["bash", script, os.path.join(stub, "build"), os.path.join(stub, "logs")],
                   capture_output=True, text=True,
                   env=dict(os.environ, NVIDIA_SMI=fake, QUICK="1",
                            PATH=os.path.join(stub, "bin") + os.pathsep + os.environ["PATH"]))
rows = {}
rows_path = os.path.join(stub, "logs", "rows.tsv")
if os.path.exists(rows_path):
    for line in open(rows_path):
        step, result = line.split("\t")[:2]
        rows[step] = result
check(p.returncode == 0 and all(q in rows for q in quick) and "graph-capture" in rows
      and rows.get("selftest-quick") == "ok" and rows.get("bench-fused") == "ok"
      and rows.get("streams") == "skip" and set(rows) - set(quick) == {"graph-capture"},
      f"QUICK=1 with stubs: exit 0 and a row for each of its steps, no other: "
      f"{p.returncode} {rows} {p.stdout[-400:]!r}")

# --- latency against the real docs/cuda.md table ---
table = lib.doc_latency(open(os.path.join(root, "docs", "cuda.md"), encoding="utf-8").read())
check(len(table) == 14, f"docs/cuda.md's latency table: 7 models x 2 precisions: {table}")
ref = table.get(("gpunet-0", "fp16"), 1.0)
rows, slow = lib.compare_latency(table, [f"gpunet-0 fp16 {ref * 1.05:.4f}",
                                         f"gpunet-0 fp32 {table.get(('gpunet-0', 'fp32'), 1):.4f}"],
                                 0.10)
check(slow == 0 and len(rows) == 2, f"5 % slower is within 10 %: {rows}")
rows, slow = lib.compare_latency(table, [f"gpunet-d2 fp16 {table.get(('gpunet-d2', 'fp16'), 1) * 1.11:.4f}"], 0.10)
check(slow == 1 and rows[0][4].startswith("SLOW"), f"11 % slower is flagged: {rows}")
rows, slow = lib.compare_latency(table, ["gpunet-9 fp16 1.0"], 0.10)
check(slow == 0 and rows[0][4] == "no reference", f"an unknown model has no reference: {rows}")
measured = os.path.join(tmp, "latency.txt")
with open(measured, "w") as f:
    f.write(f"gpunet-0 fp16 {ref * 2:.3f}\n")
p = subprocess.run([sys.executable, os.path.join(root, "scripts", "gpu_check_lib.py"), "latency",
                    os.path.join(root, "docs", "cuda.md"), measured], capture_output=True, text=True)
check(p.returncode == 1 and "SLOW" in p.stdout, f"latency command fails a slow model: {p.stdout}")

# --- records, element lines ---
frame = {"type": "frame", "input": "a.mp4", "frame": 0, "pts": 0.0, "ids": [3, 1],
         "scores": [0.9, 0.05]}
summary = {"type": "summary", "input": "a.mp4", "status": "ok", "frames": 1, "classified": 1}
check(lib.compare_records([frame, summary], [dict(frame), dict(summary)], 1e-3) == [],
      "equal records compare equal")
near = dict(frame, scores=[0.9005, 0.05])
check(lib.compare_records([frame, summary], [near, summary], 1e-3) == [], "5e-4 is within 1e-3")
check(len(lib.compare_records([frame, summary], [dict(frame, ids=[1, 3]), summary], 1e-3)) == 1,
      "another top-1 is a difference")
check(len(lib.compare_records([frame, summary], [dict(summary)], 1e-3)) == 1,
      "a missing frame record is a difference")
check(len(lib.compare_records([frame, summary], [frame, dict(summary, status="error")], 1e-3)) == 1,
      "another summary status is a difference")
line = {"frame": 4, "roi-id": -1, "ids": [2, 7], "scores": [0.6, 0.3]}
check(lib.compare_lines([line], [dict(line)], 1e-3) == [], "equal element lines")
check(len(lib.compare_lines([line], [dict(line, scores=[0.58, 0.3])], 1e-3)) == 1,
      "element lines 0.02 apart differ")
check(len(lib.compare_lines([line], [dict(line, frame=5)], 1e-3)) >= 1, "a missing frame differs")

# --- memory samples ---
flat_s = [(10.0 * i, 500000 + (i % 3) * 100, 900) for i in range(60)]
ok, text = lib.flat(flat_s, 16, 4)
check(ok, f"flat samples pass: {text}")
grow = [(10.0 * i, 500000 + i * 1024, 900) for i in range(60)]
ok, text = lib.flat(grow, 16, 4)
check(not ok and "host RSS" in text, f"1 MiB per sample of host growth fails: {text}")
gpu_grow = [(10.0 * i, 500000, 900 + i) for i in range(60)]
check(not lib.flat(gpu_grow, 16, 4)[0], "GPU memory growing by 1 MiB per sample fails")
check(not lib.flat(flat_s[:5], 16, 4)[0], "too few samples fail")

# --- the summary table ---
rows_path = os.path.join(tmp, "rows.tsv")
with open(rows_path, "w") as f:
    f.write("selftest\tok\t12/12\nsoak\tskip\tno cudaupload\n")
p = subprocess.run([sys.executable, os.path.join(root, "scripts", "gpu_check_lib.py"), "summary",
                    rows_path], capture_output=True, text=True)
check(p.returncode == 0 and "selftest" in p.stdout and "skip" in p.stdout,
      f"summary without FAIL: exit 0: {p.stdout}")
with open(rows_path, "a") as f:
    f.write("bench\tFAIL\tgpunet-0 fp16 SLOW\n")
p = subprocess.run([sys.executable, os.path.join(root, "scripts", "gpu_check_lib.py"), "summary",
                    rows_path], capture_output=True, text=True)
check(p.returncode == 1, f"summary with a FAIL: exit 1: {p.stdout}")

# --- the element helper on system memory, CPU backend ---
fixtures = os.path.join(root, "tests", "data", "fixtures")
helper = [os.path.join(build, "tools", "gpunet-element-check")]
common = ["--model", os.path.join(fixtures, "tiny-a.json"), "--checkpoint",
          os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"), "--memory", "system",
          "--backend", "cpu"]
genv = dict(os.environ, GST_PLUGIN_PATH_1_0=os.path.join(build, "gst"),
            GST_REGISTRY_1_0=os.path.join(tmp, "registry.bin"))
if not os.path.exists(helper[0]):
    print(f"element helper not run: this build has no {helper[0]} (-Dgst=disabled)")
else:
    p = subprocess.run(helper + ["regions"] + common + ["--frames", "8"],
                       capture_output=True, text=True, env=genv)
    check(p.returncode == 0 and p.stdout.strip().endswith("ok: 8 frames x 2 regions on system memory"),
          f"element helper: regions on system memory: {p.returncode} {p.stdout[-300:]} {p.stderr[-300:]}")
    p = subprocess.run(helper + ["cycles"] + common + ["--cycles", "4"],
                       capture_output=True, text=True, env=genv)
    check(p.returncode == 0 and "ok: 4/4 PLAYING->NULL cycles" in p.stdout,
          f"element helper: 4 state cycles: {p.returncode} {p.stdout[-300:]} {p.stderr[-300:]}")
    # CUDA memory: a skip (77) without cudaupload, else it must pass
    p = subprocess.run(helper + ["cycles"] + common[:4] + ["--cycles", "2"],
                       capture_output=True, text=True, env=genv)
    check(p.returncode in (0, 77), f"element helper with CUDA memory: skip without cudaupload: "
          f"{p.returncode} {p.stdout[-200:]}")
    # a frame count the source does not give fails the regions check
    p = subprocess.run(helper + ["regions"] + common + ["--frames", "0"],
                       capture_output=True, text=True, env=genv)
    check(p.returncode == 2, f"element helper: --frames 0 is a usage error: {p.returncode}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
