#!/usr/bin/python3
"""compare_runtimes.py: our CPU engine against ONNX Runtime and OpenVINO, same models,
same weights, same run.

The seven GPUNets get seeded random weights (gpunet-convert --random) and are exported
from our own graph with gpunet-convert --onnx; ONNX Runtime and OpenVINO from PyPI run in
a venv made once (tools/runtime_venv.py).  Each engine runs in float32 and in its default
precision:

  ours f32        gpunet-bench (the CPU backend is float32 and exact)
  ORT f32         ONNX Runtime's CPU provider (float32 is its default)
  OpenVINO f32    INFERENCE_PRECISION_HINT=f32
  OpenVINO dflt   OpenVINO's default: bf16 on CPUs with AVX-512 BF16 or AMX, else f32
  ours bf16       gpunet-bench --precision bf16 (with --bf16; needs AVX-512 BF16 or AMX)

Batch 1, --threads threads, each engine's passes in its own process (warm-up, then --runs
timed passes, their median).  Rounds alternate: in each round every model runs every
engine, in an order that is reversed every other round, so a slow phase of a shared
machine falls on all engines alike.  Prints a markdown table (median over rounds of each
round's median, ms, and min-max), ours / each other engine, and the load average at each
round's start.

With --interleave each engine instead stays running for a model (planned and warmed up
once; ours is gpunet-bench --stdin-runs, the others a Python server reading the same
requests) and the engines take turns of --chunk passes, --rounds x --runs passes each, the
order reversed every other turn, with a 20 ms pause after each turn for the idle engine's
threads to stop spinning.  A slow phase of a shared VM then falls on all engines within
seconds.  The table gives each engine's median over all its passes and the min-max of its
turns' medians; the ratio lines give, for each pair compared, the median and quartiles of
the per-turn ratios (ours' turn median over the other engine's in the same cycle).

  python3 tools/compare_runtimes.py --build build [--models all] [--rounds 3] [--runs 20] [--bf16]
                                    [--interleave [--chunk 5]]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MODELS = ["gpunet-0", "gpunet-1", "gpunet-2", "gpunet-p0", "gpunet-p1", "gpunet-d1",
          "gpunet-d2"]
ENGINES = ["ours-f32", "ort-f32", "ov-f32", "ov-default"]
LABELS = {"ours-f32": "ours f32", "ort-f32": "ORT f32", "ov-f32": "OpenVINO f32",
          "ov-default": "OpenVINO default", "ours-bf16": "ours bf16"}

TIMER = r"""
import sys, time, numpy as np
engine, model, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if engine == "ort-f32":
    import onnxruntime as ort
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    shape = s.get_inputs()[0].shape
    run = lambda x: s.run(None, {"input": x})
    note = "onnxruntime " + ort.__version__
else:
    import openvino as ov
    core = ov.Core()
    cfg = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
    if engine == "ov-f32":
        cfg["INFERENCE_PRECISION_HINT"] = "f32"
    m = core.read_model(model)
    shape = [1] + [d.get_length() for d in list(m.input(0).get_partial_shape())[1:]]
    m.reshape({0: shape})
    c = core.compile_model(m, "CPU", cfg)
    req = c.create_infer_request()
    run = lambda x: req.infer({0: x})
    note = "openvino %s precision=%s" % (ov.get_version().split("-")[0],
                                         c.get_property("INFERENCE_PRECISION_HINT"))
x = np.random.default_rng(1).standard_normal((1, shape[1], shape[2], shape[3])).astype(np.float32)
for _ in range(3):
    run(x)
t = []
for _ in range(runs):
    t0 = time.perf_counter(); run(x); t.append((time.perf_counter() - t0) * 1e3)
t.sort()
print("median_ms=%.3f note=%s" % (t[len(t) // 2], note))
"""


SERVER = r"""
import sys, time, numpy as np
engine, model, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
""" + TIMER.split("x = np.random", 1)[0].split("threads, runs = ", 1)[1].split("\n", 1)[1] + r"""
x = np.random.default_rng(1).standard_normal((1, shape[1], shape[2], shape[3])).astype(np.float32)
for _ in range(3):
    run(x)
print("ready note=" + note, flush=True)
for line in sys.stdin:
    n = int(line)
    if n <= 0:
        break
    t = []
    for _ in range(n):
        t0 = time.perf_counter(); run(x); t.append((time.perf_counter() - t0) * 1e3)
    print("times_ms=" + ",".join("%.4f" % v for v in t), flush=True)
"""


class Server:
    """One engine kept running on one model: run(n) times n passes (ms each)."""

    def __init__(self, cmd):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        line = self._expect("ready")
        m = re.search(r"note=(.*)", line)
        self.note = m.group(1) if m else None

    def _expect(self, prefix):
        line = self.p.stdout.readline()
        if not line.startswith(prefix):
            self.p.kill()
            err = self.p.stderr.read()
            sys.exit("%s failed: %s\n%s" % (" ".join(self.cmd), line, err.strip()[-1500:]))
        return line

    def run(self, n):
        self.p.stdin.write("%d\n" % n)
        self.p.stdin.flush()
        return [float(v) for v in self._expect("times_ms=").split("=", 1)[1].split(",")]

    def close(self):
        try:
            self.p.stdin.write("0\n")
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.stdout.read()
        self.p.wait()


def quartiles(v):
    v = sorted(v)
    q = lambda f: v[min(len(v) - 1, int(round(f * (len(v) - 1))))]
    return q(0.25), q(0.5), q(0.75)


def interleaved(a, models, engines, files, bench, py, server_py):
    """--interleave: per model, every engine running at once, turns of a.chunk passes."""
    import time
    results, notes, ratio_lines, loads = {}, {}, [], []
    pairs = [("ours-f32", "ort-f32"), ("ours-f32", "ov-f32"), ("ours-bf16", "ov-default")]
    for m in models:
        ck, onnx = files[m]
        loads.append(os.getloadavg()[0])
        servers = {}
        for e in engines:
            if e.startswith("ours-"):
                cmd = [bench, "--model", m, "--checkpoint", ck, "--threads", str(a.threads),
                       "--warmup", "3", "--no-peak", "--preprocess-runs", "0", "--stdin-runs"]
                if e == "ours-bf16":
                    cmd += ["--precision", "bf16"]
            else:
                cmd = [py, server_py, e, onnx, str(a.threads)]
            servers[e] = Server(cmd)
            if servers[e].note:
                notes[e] = servers[e].note
        turns = {e: [] for e in engines}
        for t in range(a.rounds * a.runs // a.chunk):
            for e in engine_order(engines, t):
                times = servers[e].run(a.chunk)
                turns[e].append(statistics.median(times))
                results.setdefault((m, e), []).extend(times)
                time.sleep(0.02)
        for s in servers.values():
            s.close()
        for x, y in pairs:
            if x in turns and y in turns:
                r = [p / q for p, q in zip(turns[x], turns[y])]
                q25, q50, q75 = quartiles(r)
                ratio_lines.append("%s %s / %s: per-turn ratio median %.3f (q25 %.3f, q75 "
                                   "%.3f), %d turns of %d passes" % (m, LABELS[x], LABELS[y],
                                                                    q50, q25, q75, len(r), a.chunk))
        for e in engines:
            results[(m, e, "turns")] = turns[e]
        print("%s done" % m, file=sys.stderr)
    return results, notes, ratio_lines, loads


def parse_median(text):
    m = re.search(r"median_ms=([0-9.]+)", text)
    return float(m.group(1)) if m else None


def engine_order(engines, round_index):
    """The engines of a round: as given in even rounds, reversed in odd ones."""
    return list(engines) if round_index % 2 == 0 else list(engines)[::-1]


def table(results, models, engines, turns=False):
    """Markdown lines: per model, each engine's median over rounds (min-max) and ours/it;
    with turns, the median of all passes and the min-max of the turns' medians."""
    head = "| model | " + " | ".join(LABELS.get(e, e) + " ms" for e in engines)
    head += " | " + " | ".join("ours / " + LABELS.get(e, e) for e in engines[1:]) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(engines) - 1)]
    for m in models:
        cells, med = [], {}
        for e in engines:
            v = results.get((m, e), [])
            if v:
                med[e] = statistics.median(v)
                span = results[(m, e, "turns")] if turns else v
                cells.append("%.1f (%.1f-%.1f)" % (med[e], min(span), max(span)))
            else:
                cells.append("-")
        ours = med.get(engines[0])
        ratios = ["%.2f" % (ours / med[e]) if ours and med.get(e) else "-" for e in engines[1:]]
        lines.append("| %s | %s | %s |" % (m, " | ".join(cells), " | ".join(ratios)))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="all")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true",
                    help="also ours in precision=bf16 (the CPU must have AVX-512 BF16 or AMX)")
    ap.add_argument("--interleave", action="store_true",
                    help="engines kept running, taking turns of --chunk passes")
    ap.add_argument("--chunk", type=int, default=5)
    a = ap.parse_args()
    if a.chunk < 1 or a.runs < a.chunk:
        sys.exit("--chunk must be at least 1 and at most --runs")
    engines = ENGINES + (["ours-bf16"] if a.bf16 else [])
    models = MODELS if a.models == "all" else a.models.split(",")
    import runtime_venv
    py = runtime_venv.ensure_venv(["onnxruntime", "openvino", "numpy"])
    convert = os.path.join(a.build, "tools", "gpunet-convert")
    bench = os.path.join(a.build, "tools", "gpunet-bench")
    results, notes, loads = {}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        timer = os.path.join(tmp, "timer.py")
        with open(timer, "w") as f:
            f.write(TIMER)
        server_py = os.path.join(tmp, "server.py")
        with open(server_py, "w") as f:
            f.write(SERVER)
        files = {}
        for m in models:
            ck, onnx = os.path.join(tmp, m + ".safetensors"), os.path.join(tmp, m + ".onnx")
            subprocess.run([convert, "--random", m, "--output", ck], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run([convert, "--onnx", onnx, "--model", m, "--checkpoint", ck],
                           check=True, stdout=subprocess.DEVNULL)
            files[m] = (ck, onnx)
        if a.interleave:
            results, notes, ratio_lines, loads = interleaved(a, models, engines, files, bench,
                                                             py, server_py)
            print("\n".join(table(results, models, engines, turns=True)))
            print()
            print("\n".join(ratio_lines))
            print()
            print("batch 1, %d threads, interleaved turns of %d passes, %d passes per engine; "
                  "%s; load average (1 min) at each model's start: %s"
                  % (a.threads, a.chunk, a.rounds * a.runs // a.chunk * a.chunk,
                     "; ".join("%s: %s" % (LABELS[e], v) for e, v in notes.items()),
                     ", ".join("%.2f" % v for v in loads)))
            return
        for r in range(a.rounds):
            loads.append(os.getloadavg()[0])
            for m in models:
                ck, onnx = files[m]
                for e in engine_order(engines, r):
                    if e.startswith("ours-"):
                        cmd = [bench, "--model", m, "--checkpoint", ck, "--threads",
                               str(a.threads), "--runs", str(a.runs), "--warmup", "3",
                               "--no-peak", "--preprocess-runs", "0"]
                        if e == "ours-bf16":
                            cmd += ["--precision", "bf16"]
                    else:
                        cmd = [py, timer, e, onnx, str(a.threads), str(a.runs)]
                    p = subprocess.run(cmd, capture_output=True, text=True)
                    t = parse_median(p.stdout)
                    if p.returncode != 0 or t is None:
                        sys.exit("%s on %s failed: %s" % (e, m, p.stderr.strip()[-1500:]))
                    n = re.search(r"note=(.*)", p.stdout)
                    if n:
                        notes[e] = n.group(1)
                    results.setdefault((m, e), []).append(t)
                    print("round %d %s %s: %.2f ms" % (r + 1, m, e, t), file=sys.stderr)
    print("\n".join(table(results, models, engines)))
    print()
    print("batch 1, %d threads, %d rounds of %d passes; %s; load average (1 min) at each "
          "round's start: %s" % (a.threads, a.rounds, a.runs,
                                 "; ".join("%s: %s" % (LABELS[e], v) for e, v in notes.items()),
                                 ", ".join("%.2f" % v for v in loads)))


if __name__ == "__main__":
    main()
