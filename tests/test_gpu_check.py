#!/usr/bin/env python3
"""test_gpu_check.py: what of scripts/gpu-check.sh runs without a GPU.  The script parses
(bash -n); with no GPU it says "no GPU: nothing to check" and exits 77; with a GPU listed
but no usable CUDA backend it exits 1 naming the cause; its comparisons
(scripts/gpu_check_lib.py) pass and fail on canned inputs: the latency table of the real
docs/cuda.md (a model 10 % slower is flagged), gpunet-tag records, element JSON lines, flat
and growing memory samples, the summary table; and the element helper
(tools/gpunet-element-check) runs its region and state-cycle checks on system memory with
the CPU backend.  `--profile short` runs on stub tools (bench, self-test, PyTorch,
gst-launch, nvidia-smi): every target met passes; missed targets fail their gates; an
opt-in variant is timed beside the default; a spent budget fails the steps past it.
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
# every stub run of gpunet-bench, gpunet-selftest and the op harness logs its arguments
# (and GPUNET_CUDA) here; the real tools' parsers check them at the end
tool_args = os.path.join(tmp, "tool-args.txt")
log_args = lambda tool: f"printf '{tool}\\t%s\\t%s\\n' \"${{GPUNET_CUDA:-}}\" \"$*\" >> '{tool_args}'\n"
stub = os.path.join(tmp, "stub")
os.makedirs(os.path.join(stub, "build", "tools"))
os.makedirs(os.path.join(stub, "bin"))
stubs = {
    # a latency line for bench, an A/B line for bench-ab, thread lines for cpu-threads
    "build/tools/gpunet-bench": "case \"$*\" in *--threads*) for t in 1 2 4 8 16; do "
    "echo \"model=stub batch=1 threads=$t median_ms=1.0 min_ms=1.0\"; done ;; "
    "*--ab*) [ -n \"$STUB_AB_SLEEP\" ] && sleep $STUB_AB_SLEEP; echo 'ab_pairs=20 spec=stub timing=gpu_net a_median_ms=0.4 b_median_ms=0.3 "
    "b_over_a=0.750 q25=0.700 q75=0.800' ;; "
    "*--per-layer*) echo 'op   block kind     shape (in -> out)    ms  GFLOP/s  MB'; "
    "echo '0    0     conv2d   3x8x8 -> 8x4x4    0.0100  1.0  0.100'; "
    "echo '1    0     dwconv2d 8x4x4 -> 8x4x4    0.0050  1.0  0.100' ;; "
    "*) echo 'gpu_median_ms=0.400 (stub)' ;; esac",
    "build/tools/gpunet-selftest": "echo 'stub self-test: PASS'",
    # the op harness: passes for its CUDA run only
    "build/tests/test_backend_ops": "echo \"stub op harness: $1\"; "
    "case \"$1\" in cuda|cuda-all) ;; *) exit 1 ;; esac",
    "build/tools/gpunet-convert": "while [ $# -gt 0 ]; do [ \"$1\" = --output ] && : > \"$2\"; shift; done",
    "build/tools/gpunet-element-check": "echo 'detail: ok: stub'",
    # no GStreamer element exists: no clip is made, the decoder steps skip
    "bin/gst-inspect-1.0": "exit 1",
    "bin/gst-launch-1.0": "exit 1",
}
logged = {"build/tools/gpunet-bench": "bench", "build/tools/gpunet-selftest": "selftest",
          "build/tests/test_backend_ops": "ops"}
for name, body in stubs.items():
    path = os.path.join(stub, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + (log_args(logged[name]) if name in logged else "") + body + "\n")
    os.chmod(path, 0o755)
def read_rows(logs):
    """step -> result from a run's rows.tsv (empty when the run wrote none)"""
    path = os.path.join(logs, "rows.tsv")
    if not os.path.exists(path):
        return {}
    return {line.split("\t")[0]: line.split("\t")[1] for line in open(path) if "\t" in line}


quick = subprocess.run(["bash", "-c", "source <(sed -n '/^QUICK_STEPS=/,/\"$/p' \"$0\"); "
                        "echo $QUICK_STEPS", script], capture_output=True, text=True).stdout.split()
check(len(quick) >= 10 and "selftest-quick" in quick,
      f"QUICK_STEPS read from the script: {quick}")
p = subprocess.run(["bash", script, os.path.join(stub, "build"), os.path.join(stub, "logs")],
                   capture_output=True, text=True,
                   env=dict(os.environ, NVIDIA_SMI=fake, QUICK="1",
                            PATH=os.path.join(stub, "bin") + os.pathsep + os.environ["PATH"]))
rows = read_rows(os.path.join(stub, "logs"))
check(p.returncode == 0 and all(q in rows for q in quick) and "graph-capture" in rows
      and rows.get("selftest-quick") == "ok" and rows.get("backend-ops") == "ok"
      and rows.get("streams") == "skip" and set(rows) - set(quick) == {"graph-capture"},
      f"QUICK=1 with stubs: exit 0 and a row for each of its steps, no other: "
      f"{p.returncode} {rows} {p.stdout[-400:]!r}")

# --- --profile options with the same stubs: the four steps, their measurements, no gates ---
p = subprocess.run(["bash", script, "--profile", "options", os.path.join(stub, "build"),
                    os.path.join(stub, "logs-options")], capture_output=True, text=True,
                   env=dict(os.environ, NVIDIA_SMI=fake,
                            PATH=os.path.join(stub, "bin") + os.pathsep + os.environ["PATH"]))
rows = read_rows(os.path.join(stub, "logs-options"))
log = lambda name: open(os.path.join(stub, "logs-options", name + ".log")).read() \
    if os.path.exists(os.path.join(stub, "logs-options", name + ".log")) else ""
check(p.returncode == 0
      and set(rows) == {"selftest-options", "bench-ab", "layers-nhwc", "backend-ops-all",
                        "graph-capture"}
      and all(r == "ok" for r in rows.values())
      and "fused=2 0.750" in log("bench-ab") and "nhwc+nhwctune=on 0.750" in log("bench-ab")
      and "(1.000x)" in log("layers-nhwc") and "cuda-all" in log("backend-ops-all")
      and "gate-" not in p.stdout,
      f"--profile options with stubs: its four steps ok, ratios and joins in their logs, "
      f"no gates: {p.returncode} {rows} {p.stdout[-400:]!r}")

# bench-ab under a short budget: the runs that would pass the step's limit are not started,
# what was measured is kept and the detail says how much (4 s a run, about 24 s of limit;
# a model cut part way shows its row marked "(cut)")
p = subprocess.run(["bash", script, "--profile", "options", os.path.join(stub, "build"),
                    os.path.join(stub, "logs-ab-cut")], capture_output=True, text=True,
                   env=dict(os.environ, NVIDIA_SMI=fake, STEPS="bench-ab", PROFILE_BUDGET_S="40",
                            AB_RUN_S="1", STUB_AB_SLEEP="4",
                            PATH=os.path.join(stub, "bin") + os.pathsep + os.environ["PATH"]))
rows = read_rows(os.path.join(stub, "logs-ab-cut"))
abl = open(os.path.join(stub, "logs-ab-cut", "bench-ab.log")).read() \
    if os.path.exists(os.path.join(stub, "logs-ab-cut", "bench-ab.log")) else ""
abt = os.path.join(stub, "logs-ab-cut", "work", "ab.txt")
measured = open(abt).read().count("b_over_a=") if os.path.exists(abt) else 0
check(p.returncode == 0 and rows.get("bench-ab") == "ok" and 2 <= measured < 42
      and f"{measured} of 42 runs within the step limit" in abl
      and ("(cut)" in abl) == (measured % 6 != 0)
      and "over its" not in abl,
      f"bench-ab cut by its limit: ok with {measured} of 42 runs kept and named: "
      f"{p.returncode} {rows} {abl[-600:]!r}")

# --- --profile short with stub tools: measurements, gates, the table, the budget ---
pstub = os.path.join(tmp, "pstub")
os.makedirs(os.path.join(pstub, "build", "tools"))
os.makedirs(os.path.join(pstub, "bin"))
pstubs = {
    # gpunet-bench: its arguments logged; GPUNet-0 fp16 batch 1 STUB_G0_MS, batch 8 0.9 ms,
    # every other run 0.2 ms; graph nodes with STUB_KERNELS kernels
    "build/tools/gpunet-bench": """echo "$*" >> "$STUB_ARGS"
net=0.200; b=1
case "$*" in *"--batch 8"*) net=0.900; b=8 ;; *"--model gpunet-0 --backend cuda --precision fp16"*) net=${STUB_G0_MS:-0.200} ;; esac
echo "plan_ms=1.0 (stub)"
echo "gpu_ms=0.400 gpu_median_ms=0.400 (stub)"
echo "gpu_net_ms=$net net_images_per_s=$(awk -v b=$b -v t=$net 'BEGIN {printf "%.1f", b / t * 1000}') batch=$b (stub)"
case "$*" in *--graph-nodes*) echo "graph_nodes=forward batch=1 kernels=${STUB_KERNELS:-44} memcpy=2 memset=1 other=0 total=47"
  echo "graph_nodes=network batch=1 kernels=42 memcpy=0 memset=1 other=0 total=43"
  echo "graph_kernels=${STUB_KERNELS:-44} (stub)" ;; esac
echo "model=stub batch=$b threads=2 median_ms=0.5 min_ms=0.5 gflops=1 achieved_gflops_s=1" """,
    "build/tools/gpunet-selftest": "echo 'stub self-test: PASS'",
    # the op harness: passes for its CUDA run only
    "build/tests/test_backend_ops": "echo \"stub op harness: $1\"; "
    "case \"$1\" in cuda|cuda-all) ;; *) exit 1 ;; esac",
    "build/tools/gpunet-convert": "while [ $# -gt 0 ]; do [ \"$1\" = --output ] && : > \"$2\"; shift; done",
    # PyTorch: 0.3 ms everywhere (ours 0.2 is ahead), D2 fp16 STUB_TORCH_D2
    "bin/torch-stub": """echo "# stub torch"
for m in $(echo "$2" | tr , ' '); do t=0.300; [ $m = gpunet-d2 ] && t=${STUB_TORCH_D2:-0.300}
  echo "$m fp16 1 $t"; echo "$m fp32 1 0.300"; done""",
    "bin/gst-inspect-1.0": "exit 0",
    # gst-launch: writes filesink locations and 300-line json outputs; 8 decoders take 1.00
    # s, with the shared engine STUB_SHARED_S
    "bin/gst-launch-1.0": """t=1.000
for a in "$@"; do case $a in location=*) [ "$prev" = filesink ] && echo x > "${a#location=}" ;;
  json-output=*) seq 300 > "${a#json-output=}" ;; gpunetclassify) t=${STUB_SHARED_S:-1.050} ;; esac; prev=$a; done
echo "Execution ended after 0:00:0$t" """,
    "bin/nvidia-smi": """case "$*" in -L) echo 'GPU 0: Stub H100 (UUID: GPU-0)' ;;
  *--query-gpu=name*) echo 'NVIDIA Stub H100 80GB HBM3, 580.00' ;; *) exit 1 ;; esac""",
}
for name, body in pstubs.items():
    path = os.path.join(pstub, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + (log_args(logged[name]) if name in logged else "") + body + "\n")
    os.chmod(path, 0o755)
penv = dict(os.environ, NVIDIA_SMI=os.path.join(pstub, "bin", "nvidia-smi"),
            PATH=os.path.join(pstub, "bin") + os.pathsep + os.environ["PATH"],
            TORCH_BASELINE=os.path.join(pstub, "bin", "torch-stub"), GPUNET_COMMIT="abc1234",
            STUB_ARGS=os.path.join(tmp, "bench-args.txt"), ROUNDS="2")


def run_profile(logs, **extra):
    if os.path.exists(penv["STUB_ARGS"]):
        os.remove(penv["STUB_ARGS"])
    p = subprocess.run(["bash", script, "--profile", "short", os.path.join(pstub, "build"),
                        os.path.join(tmp, logs)], capture_output=True, text=True,
                       env=dict(penv, **extra), timeout=600)
    rows = {}
    rp = os.path.join(tmp, logs, "rows.tsv")
    if os.path.exists(rp):
        for line in open(rp):
            f = line.rstrip("\n").split("\t")
            rows[f[0]] = f[1:]
    md = os.path.join(tmp, logs, "profile.md")
    table = open(md).read() if os.path.exists(md) else ""
    args = open(penv["STUB_ARGS"]).read() if os.path.exists(penv["STUB_ARGS"]) else ""
    return p, rows, table, args


p, rows, table, args = run_profile("prof-pass", GPUNET_BENCH_EXTRA="--no-peak")
gates = ["gate-g0-latency", "gate-vs-pytorch", "gate-kernels", "gate-batch8", "gate-streams",
         "gate-selftest"]
steps = ["graph-nodes", "throughput", "latency", "backend-ops", "selftest-quick", "streams"]
check(p.returncode == 0 and all(rows.get(k, [""])[0] == "ok" for k in gates + steps),
      f"--profile short, all targets met: exit 0, every step and gate ok: {p.returncode} {rows} "
      f"{p.stdout[-1500:]!r} {p.stderr[-500:]!r}")
check(set(rows) == set(gates + steps + ["graph-capture"]),
      f"--profile short runs its steps only: {sorted(rows)}")
check("abc1234" in table and "NVIDIA Stub H100 80GB HBM3, driver 580.00" in table
      and table.count("| PASS |") == 6 and "| GPUNet-D2 |" in table
      and "`--no-peak`" in table and "0.200" in table,
      f"the table names the commit, the GPU, the options and its numbers: {table}")
check(p.stdout.rstrip().endswith(table.rstrip().splitlines()[-1]),
      f"the table is printed last: {p.stdout[-300:]!r}")
lat_runs = [l for l in args.splitlines() if "--runs 20 --warmup 5" in l and "--batch" not in l]
check(len(lat_runs) == 2 * 14 and all("--no-peak" in l for l in args.splitlines()
                                       if "--runs 1 --warmup 0" not in l),
      f"2 rounds x 14 latencies, GPUNET_BENCH_EXTRA on every run: {len(lat_runs)} {args[:300]!r}")
check("--graph-nodes" in args and "--batch 8" in args, "graph nodes and batch 8 were run")
measured = open(os.path.join(tmp, "prof-pass", "work", "profile.tsv")).read()
check(measured.count("lat torch ") == 28 and measured.count("lat ours ") == 28
      and "streams shared 2 1.05" in measured and "nodes ours forward 44 2 1 0 47" in measured,
      f"the measurements file: {measured[:400]!r}")

# targets missed: GPUNet-0 slow, D2 fp16 behind PyTorch, 46 kernels, streams 0.8x
p, rows, table, args = run_profile("prof-fail", STUB_G0_MS="0.300", STUB_TORCH_D2="0.100",
                                   STUB_KERNELS="46", STUB_SHARED_S="1.250", ROUNDS="1")
check(p.returncode == 1 and [rows.get(g, [""])[0] for g in gates]
      == ["FAIL", "FAIL", "FAIL", "ok", "FAIL", "ok"],
      f"missed targets fail their gates and the run: {p.returncode} {rows}")
check("GPUNet-D2 fp16 0.200/0.100" in table and "**0.200**" in table and "0.80x" in table,
      f"the table shows what is behind: {table}")

# an opt-in variant beside the default: both in every round, the alt gates not gated
p, rows, table, args = run_profile("prof-alt", GPUNET_BENCH_ALT="--cuda-fused", ROUNDS="1",
                                   STUB_KERNELS="44")
alt_runs = [l for l in args.splitlines() if "--cuda-fused" in l]
check(p.returncode == 0 and len(alt_runs) == 14 + 1 + 4 and "| alt fp16 |" in table
      and "| alt: kernels per GPUNet-0 fp16 forward" in table,
      f"GPUNET_BENCH_ALT: alt runs beside ours ({len(alt_runs)}), its columns: {p.returncode} {table}")
check("(not gated)" in table and "gate-alt" not in " ".join(rows), "alt gates are shown, not gated")

# the budget: steps that would pass it are not started, the run fails, the table is still printed
p, rows, table, args = run_profile("prof-budget", PROFILE_BUDGET_S="20", ROUNDS="1")
check(p.returncode == 1 and any(v[0] == "FAIL" and "not started" in v[1] for v in rows.values())
      and "=== table for docs/cuda.md" in p.stdout,
      f"PROFILE_BUDGET_S: steps past it not started, exit 1, table printed: {p.returncode} {rows}")
p = subprocess.run(["bash", script, "--profile", "long"], capture_output=True, text=True, env=penv)
check(p.returncode == 2 and "--profile takes 'short'" in p.stdout, f"--profile long: {p.stdout!r}")

# every command line the steps above gave the tools, through the real tools' parsers:
# without a GPU each stops after parsing, gpunet-bench with 1 (no CUDA driver; 2 is a
# usage error), the self-test and the op harness with 77 (skipped; the self-test says 1
# to a usage error, and the op harness takes a word other than cuda or cuda-all for a
# filter of its CPU tests); each GPUNET_CUDA the self-test got goes through the parser
# gpunet-bench's --cuda shares with it.  An option a tool no longer takes fails here,
# not on the GPU.  Where the CUDA backend runs, the tools would run for real: not done.
real = {"bench": os.path.join(build, "tools", "gpunet-bench"),
        "selftest": os.path.join(build, "tools", "gpunet-selftest"),
        "ops": os.path.join(build, "tests", "test_backend_ops")}
no_gpu_rc = {"bench": 1, "selftest": 77, "ops": 77}
lines = sorted(set(open(tool_args).read().splitlines())) if os.path.exists(tool_args) else []
kinds = {line.split("\t")[0] for line in lines}
check({"bench", "selftest", "ops"} <= kinds and len(lines) > 20,
      f"the stub runs logged the tools' arguments: {len(lines)} lines, {kinds}")
refused = []
for line in lines if not cuda_runs else []:
    tool, cuda_env, argv = (line.split("\t") + ["", ""])[:3]
    # the CPU thread list runs the whole CPU benchmark per value: not replayed
    if tool not in real or not os.path.exists(real[tool]) or "--backend cpu" in argv:
        continue
    env = dict(os.environ)
    env.pop("GPUNET_CUDA", None)
    r = subprocess.run([real[tool]] + argv.split(), capture_output=True, text=True, env=env,
                       timeout=120)
    if r.returncode != no_gpu_rc[tool]:
        refused.append(f"{tool} {argv}: exit {r.returncode}: "
                       f"{(r.stderr + r.stdout).strip().splitlines()[:1]}")
    if cuda_env:
        r = subprocess.run([real["bench"], "--model", "gpunet-0", "--backend", "cuda",
                            "--preprocess-runs", "0", "--runs", "1", "--warmup", "0",
                            "--net-groups", "0", "--cuda", cuda_env],
                           capture_output=True, text=True, env=env, timeout=120)
        if r.returncode != no_gpu_rc["bench"]:
            refused.append(f"GPUNET_CUDA={cuda_env}: exit {r.returncode}: "
                           f"{r.stderr.strip().splitlines()[:1]}")
check(not refused, f"every tool command line of gpu-check's steps parses: {refused}")

# the gates on canned data
data = lib.read_profile(["lat ours gpunet-0 fp16 1 0.240 0.400", "lat torch gpunet-0 fp16 1 0.5",
                         "nodes ours forward 45 2 0 0 47", "thru ours 8 1 1.0 8000 1.3",
                         "streams decoders 1 1.0", "streams shared 1 1.11", "junk line"])
g = lib.profile_gates(data, "ours", "ok")
check([x[3] for x in g] == [True, False, True, True, True, True],
      f"gates at their limits pass; 13 of 14 PyTorch pairs missing fail: {g}")
check(lib.median([3.0, 1.0, 2.0, 10.0]) == 2.5 and lib.median([]) is None, "median")

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
