#!/usr/bin/python3
"""contention_bench.py: our CPU engine against ONNX Runtime on quiet and on busy cores.

Issue 47's target: with competing processes on the cores, our time / ONNX Runtime's time
stays within 1.2x of the same ratio on the quiet machine, measured in the same run.  The
script starts the competing processes itself (--busy N plain spin loops, one process each)
and alternates, in every round, the machine's state (quiet, busy; the order flips each
round) and, within a state, the engines (ours with each --waits value of the cpu option
wait=, then ONNX Runtime; the order flips too), so a slow phase of a shared machine falls
on all alike.  Each engine pass is one process: gpunet-bench for ours (--runs passes, its
median), a small ONNX Runtime timer in the runtimes venv (tools/runtime_venv.py, made once
from PyPI) on the model exported by gpunet-convert --onnx with the same weights.  Batch 1,
--threads threads on both sides.

With --streams, also the element: gpunet-streams (videotestsrc ! videoconvert !
gpunetclassify, --streams streams sharing one engine) quiet and busy, its frames/s, for
each wait value (GPUNET_CPU=wait=...).

Prints a markdown table (min / median / max over the rounds of each round's median), the
ratios, and the load average at each round's start.

  python3 tools/contention_bench.py --build build [--models gpunet-0,gpunet-d1]
      [--rounds 3] [--runs 20] [--busy 2] [--waits auto,spin,passive,spins=1000]
      [--streams 4]
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ORT_TIMER = r"""
import sys, time, numpy as np, onnxruntime as ort
model, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
o = ort.SessionOptions()
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
shape = s.get_inputs()[0].shape
x = np.random.default_rng(1).standard_normal((1, shape[1], shape[2], shape[3])).astype(np.float32)
for _ in range(3):
    s.run(None, {"input": x})
t = []
for _ in range(runs):
    t0 = time.perf_counter()
    s.run(None, {"input": x})
    t.append((time.perf_counter() - t0) * 1e3)
t.sort()
print("median_ms=%.3f" % t[len(t) // 2])
"""


def summary(values):
    """min / median / max as text, '-' when empty."""
    if not values:
        return "-"
    return "%.1f / %.1f / %.1f" % (min(values), statistics.median(values), max(values))


def parse_median(text):
    m = re.search(r"median_ms=([0-9.]+)", text)
    return float(m.group(1)) if m else None


def ratio_rows(results, models, waits):
    """For each model and wait: ours/ORT quiet, ours/ORT busy and busy/quiet of the two
    (medians over rounds).  `results[(model, load, engine)]` lists round medians."""
    rows = []
    for m in models:
        for w in waits:
            r = {}
            for load in ("quiet", "busy"):
                ours = results.get((m, load, "ours:" + w), [])
                ort = results.get((m, load, "ort"), [])
                r[load] = (statistics.median(ours) / statistics.median(ort)
                           if ours and ort else None)
            rel = r["busy"] / r["quiet"] if r["quiet"] and r["busy"] else None
            rows.append((m, w, r["quiet"], r["busy"], rel))
    return rows


class Busy:
    """N spinning processes, started and stopped by the benchmark."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(
                [sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL))
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.send_signal(signal.SIGKILL)
        for p in self.procs:
            p.wait()
        self.procs = []


def wait_env(wait):
    """The cpu option and environment of a --waits value: auto, spin, passive, or spins=N
    (libgomp's GOMP_SPINCOUNT=N, which wins over the option: candidates for auto)."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    if wait.startswith("spins="):
        env["GOMP_SPINCOUNT"] = wait[6:]
        return "auto", env
    return wait, env


def run_ours(build, model, ck, threads, runs, wait):
    option, env = wait_env(wait)
    p = subprocess.run([os.path.join(build, "tools", "gpunet-bench"), "--model", model,
                        "--checkpoint", ck, "--threads", str(threads), "--runs", str(runs),
                        "--warmup", "3", "--no-peak", "--preprocess-runs", "0",
                        "--cpu", "wait=" + option], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError("gpunet-bench failed: " + p.stderr.strip())
    return parse_median(p.stdout)


def run_ort(py, timer, onnx, threads, runs):
    p = subprocess.run([py, timer, onnx, str(threads), str(runs)], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError("ONNX Runtime timer failed: " + p.stderr.strip()[-1500:])
    return parse_median(p.stdout)


def run_streams(build, ck, streams, threads, wait):
    option, env = wait_env(wait)
    env["GPUNET_CPU"] = "wait=" + option
    p = subprocess.run([os.path.join(build, "tools", "gpunet-streams"),
                        "--streams", str(streams), "--frames", "24", "--backend", "cpu",
                        "--n-threads", str(threads), "--model", "gpunet-0",
                        "--checkpoint", ck], capture_output=True, text=True, env=env)
    m = re.search(r"fps=([0-9.]+)", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError("gpunet-streams failed: " + (p.stderr + p.stdout).strip()[-1500:])
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="gpunet-0,gpunet-d1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy", type=int, default=2, help="competing spinning processes")
    ap.add_argument("--waits", default="auto,spin,passive")
    ap.add_argument("--streams", type=int, default=0,
                    help="also gpunet-streams with this many streams (0: not run)")
    a = ap.parse_args()
    # a TERM (timeout, kill) unwinds like ^C, so the competing processes are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    models = [m for m in a.models.split(",") if m]
    waits = [w for w in a.waits.split(",") if w]
    import runtime_venv
    py = runtime_venv.ensure_venv(["onnxruntime", "numpy"])
    convert = os.path.join(a.build, "tools", "gpunet-convert")
    results, loads = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        timer = os.path.join(tmp, "ort_timer.py")
        with open(timer, "w") as f:
            f.write(ORT_TIMER)
        files = {}
        for m in models + (["gpunet-0"] if a.streams and "gpunet-0" not in models else []):
            ck, onnx = os.path.join(tmp, m + ".safetensors"), os.path.join(tmp, m + ".onnx")
            subprocess.run([convert, "--random", m, "--output", ck], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run([convert, "--onnx", onnx, "--model", m, "--checkpoint", ck],
                           check=True, stdout=subprocess.DEVNULL)
            files[m] = (ck, onnx)
        engines = ["ours:" + w for w in waits] + ["ort"]
        for r in range(a.rounds):
            for load in (("quiet", "busy") if r % 2 == 0 else ("busy", "quiet")):
                loads.append((r, load, os.getloadavg()[0]))
                with Busy(a.busy if load == "busy" else 0):
                    order = engines if r % 2 == 0 else engines[::-1]
                    for m in models:
                        ck, onnx = files[m]
                        for e in order:
                            t = (run_ort(py, timer, onnx, a.threads, a.runs) if e == "ort"
                                 else run_ours(a.build, m, ck, a.threads, a.runs, e[5:]))
                            results.setdefault((m, load, e), []).append(t)
                            print("round %d %s %s %s: %.2f ms" % (r + 1, load, m, e, t),
                                  file=sys.stderr)
                    if a.streams:
                        for w in (waits if r % 2 == 0 else waits[::-1]):
                            fps = run_streams(a.build, files["gpunet-0"][0], a.streams,
                                              a.threads, w)
                            results.setdefault(("streams", load, w), []).append(fps)
                            print("round %d %s streams wait=%s: %.1f fps" % (r + 1, load, w, fps),
                                  file=sys.stderr)
    print("| model | load | engine | ms per pass, min / median / max over %d rounds |"
          % a.rounds)
    print("|---|---|---|---|")
    for m in models:
        for load in ("quiet", "busy"):
            for e in engines:
                name = "ONNX Runtime" if e == "ort" else "ours, wait=" + e[5:]
                print("| %s | %s | %s | %s |" % (m, load, name, summary(results.get((m, load, e)))))
    print()
    print("| model | wait | ours/ORT quiet | ours/ORT busy | busy ratio / quiet ratio (target <= 1.2) |")
    print("|---|---|---|---|---|")
    for m, w, q, b, rel in ratio_rows(results, models, waits):
        fmt = lambda v: "%.2f" % v if v is not None else "-"
        print("| %s | %s | %s | %s | %s |" % (m, w, fmt(q), fmt(b), fmt(rel)))
    if a.streams:
        print()
        print("| gpunet-streams, %d streams, gpunet-0 | quiet fps | busy fps |" % a.streams)
        print("|---|---|---|")
        for w in waits:
            print("| wait=%s | %s | %s |" % (w, summary(results.get(("streams", "quiet", w))),
                                            summary(results.get(("streams", "busy", w)))))
    print()
    print("busy: %d spinning processes; threads %d; batch 1; load average (1 min) at each "
          "state's start: %s" % (a.busy, a.threads,
                                 ", ".join("r%d %s %.2f" % (r + 1, l, v) for r, l, v in loads)))


if __name__ == "__main__":
    main()
