#!/usr/bin/python3
"""compare_pytorch.py: gst-gpunet's CPU engine against NVIDIA's own PyTorch GPUNet code.

For each of NVIDIA's seven architecture configs this script builds the model with NVIDIA's
`GPUNet_Builder().get_model(config)` (from a checkout of NVIDIA's GPUNet directory that the
user provides; no NVIDIA code is kept in this repository), gives it seeded random weights
with realistic BatchNorm statistics, saves its state_dict with torch.save and then

  * prints PyTorch's parameter count (sum of p.numel() over parameters) next to the one in
    docs/models.md;
  * runs tools/gpunet-run on the saved checkpoint and a seeded random normalised input
    (batch 2, float32 NCHW), with the fast backend and (--backend cpu-ref) the
    reference oracle, and compares the logits with PyTorch's float32 and float64 forwards:
    max |diff| / max(1, max |ref|) and top-5 agreement;
  * benchmarks PyTorch float32 (torch.set_num_threads(T), batch 1, no_grad, warmup 5)
    against tools/gpunet-bench on the same checkpoint with the same threads, kept running
    (--stdin-runs) so that the two sides' passes alternate in turns of --chunk (5) passes,
    --rounds x --runs (5 x 30) passes per side: a slow phase of the VM falls on both alike.
    The table shows each side's median and minimum over all its passes, and a last line
    says whether ours is at most 0.5x PyTorch's on every model timed.

It prints a markdown table.  Needs only the Python standard library, torch and numpy.
NVIDIA's code imports a few timm names; where timm is not installed, put a small shim
package named `timm` on PYTHONPATH (only `timm.models.layers.create_act_layer` is used when
building a model; the others are imported but unused).

  /usr/bin/python3 tools/compare_pytorch.py --nvidia-code ~/DeepLearningExamples/PyTorch/Classification/GPUNet \\
      --configs /path/to/gpunet-configs --build build [--threads 2] [--rounds 5] [--chunk 5]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

# config file -> built-in name of our engine
MODELS = [("0.65ms.json", "gpunet-0"), ("0.85ms.json", "gpunet-1"), ("1.75ms.json", "gpunet-2"),
          ("0.5ms-D.json", "gpunet-p0"), ("0.8ms-D.json", "gpunet-p1"),
          ("1.25ms-D.json", "gpunet-d1"), ("2.25ms-D.json", "gpunet-d2")]


def load_json(path):
    with open(path) as f:
        return json.load(f)


def randomise(model, res, seed):
    """Seeded random weights of realistic scale.  BatchNorm running statistics are first
    measured on random inputs (train-mode pass, cumulative average) and then perturbed
    randomly, so BN is far from the identity but activations keep a sane scale."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                fan_in = m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            elif isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(torch.randn(n, generator=g) * 0.2)
                m.reset_running_stats()
                m.momentum = None  # cumulative moving average
            elif isinstance(m, torch.nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (4.0 / m.in_features) ** 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
        model.train()
        torch.manual_seed(seed)
        model(torch.randn((2, 3, res, res), generator=g))
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                std = m.running_var.clamp_min(1e-6).sqrt()
                m.running_mean.add_(torch.randn(m.num_features, generator=g) * 0.2 * std)
                m.running_var.mul_(torch.exp(torch.randn(m.num_features, generator=g) * 0.2))
                m.momentum = 0.1
    model.eval()


def rel_err(x, ref):
    return float(np.max(np.abs(x - ref)) / max(1.0, float(np.max(np.abs(ref)))))


def top5_agree(x, ref):
    """(images whose ordered top-5 match, images whose top-5 sets match, images)"""
    ordered = sets = 0
    for a, b in zip(x, ref):
        ta, tb = np.argsort(-a)[:5], np.argsort(-b)[:5]
        ordered += int(np.array_equal(ta, tb))
        sets += int(set(ta) == set(tb))
    return ordered, sets, len(ref)


def docs_params(repo):
    """name -> parameter count from docs/models.md's model table (None if unreadable)"""
    out = {}
    try:
        with open(os.path.join(repo, "docs", "models.md")) as f:
            for line in f:
                m = re.match(r"\|\s*(gpunet-\w+)\s*\|[^|]*\|[^|]*\|[^|]*\|\s*([\d,]+)\s*\|", line)
                if m:
                    out[m.group(1)] = int(m.group(2).replace(",", ""))
    except OSError:
        pass
    return out


def run_ours(build, model, ckpt, inp, batch, classes, threads, reference):
    out = inp + (".ref" if reference else ".fast") + ".out"
    env = dict(os.environ)
    cmd = [os.path.join(build, "tools", "gpunet-run"), "--model", model, "--checkpoint", ckpt,
           "--input", inp, "--batch", str(batch), "--output", out,
           "--backend", "cpu-ref" if reference else "cpu",
           "--threads", str(threads), "--top-k", "1"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("gpunet-run failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stdout))
    logits = np.fromfile(out, dtype="<f4").reshape(batch, classes)
    os.unlink(out)
    return logits, dt


class OursServer:
    """tools/gpunet-bench --stdin-runs on the checkpoint: planned and warmed up once, then
    times the passes it is asked for, so that ours and PyTorch's passes can alternate in
    small turns within one session."""

    def __init__(self, build, name, ckpt, threads, warmup):
        self.cmd = [os.path.join(build, "tools", "gpunet-bench"), "--model", name,
                    "--checkpoint", ckpt, "--batch", "1", "--threads", str(threads),
                    "--warmup", str(warmup), "--preprocess-runs", "0", "--stdin-runs"]
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        self._expect("ready")

    def _expect(self, prefix):
        line = self.p.stdout.readline()
        if not line.startswith(prefix):
            rest = self.p.stdout.read() if self.p.poll() is not None or not line else ""
            self.p.kill()
            sys.exit("gpunet-bench --stdin-runs failed: %s\n%s%s" % (" ".join(self.cmd), line, rest))
        return line

    def run(self, n):
        self.p.stdin.write("%d\n" % n)
        self.p.stdin.flush()
        line = self._expect("times_ms=")
        return [float(t) for t in line.split("=", 1)[1].split(",")]

    def close(self):
        self.p.stdin.write("0\n")
        self.p.stdin.close()
        out = self.p.stdout.read()
        if self.p.wait() != 0:
            sys.exit("gpunet-bench --stdin-runs failed at the end: %s\n%s" % (" ".join(self.cmd), out))
        m = re.search(r"^cross_core_write_ns_per_line=([\d.]+)", out, re.M)
        return float(m.group(1)) if m else None


def torch_times(model, x, n):
    times = []
    with torch.no_grad():
        for _ in range(n):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def bench_interleaved(model, res, build, name, ckpt, threads, turns, chunk, warmup, seed):
    """turns x chunk timed passes per side, in turns of chunk passes that alternate between
    PyTorch and ours (PyTorch first in even turns, ours first in odd ones), so that a VM's
    slow phase of a few seconds falls on both sides alike.  Returns both sides' times and
    gpunet-bench's cross-core write cost at the end (ns per line; None with one thread)."""
    x = torch.randn((1, 3, res, res), generator=torch.Generator().manual_seed(seed))
    torch_times(model, x, warmup)
    ours = OursServer(build, name, ckpt, threads, warmup)
    tt, ot = [], []
    xcore = None
    try:
        for k in range(turns):
            if k % 2 == 0:
                tt += torch_times(model, x, chunk)
                ot += ours.run(chunk)
            else:
                ot += ours.run(chunk)
                tt += torch_times(model, x, chunk)
    finally:
        xcore = ours.close()
    return tt, ot, xcore


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nvidia-code", required=True,
                    help="NVIDIA's GPUNet directory (contains models/gpunet_builder.py)")
    ap.add_argument("--configs", required=True, help="directory with NVIDIA's seven JSON configs")
    ap.add_argument("--build", required=True, help="meson build directory of gst-gpunet")
    ap.add_argument("--models", default="", help="comma-separated subset of built-in names")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds x runs timed passes per side and model (default 5 x 30)")
    ap.add_argument("--chunk", type=int, default=5,
                    help="passes per turn: PyTorch's and ours alternate in turns of this "
                    "many passes, so a VM's slow phase falls on both sides alike; each "
                    "side's median is over all its passes")
    ap.add_argument("--reference", choices=["all", "none"], default="all",
                    help="also run the reference oracle (--backend cpu-ref); slow")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    sys.path.insert(0, os.path.abspath(args.nvidia_code))
    from models.gpunet_builder import GPUNet_Builder  # NVIDIA's code, from the user's checkout

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    documented = docs_params(repo)
    wanted = set(filter(None, args.models.split(",")))
    torch.set_num_threads(args.threads)
    batch = 2
    rows = []
    session_t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpunet-cmp-") as tmp:
        for i, (cfg_file, name) in enumerate(MODELS):
            if wanted and name not in wanted:
                continue
            cfg_path = os.path.join(args.configs, cfg_file)
            cfg = load_json(cfg_path)
            res = cfg[0]["img_resolution"]
            torch.manual_seed(args.seed + i)
            model = GPUNet_Builder().get_model(cfg)
            randomise(model, res, args.seed + i)
            params = sum(p.numel() for p in model.parameters())
            classes = [c for c in cfg if c.get("layer_type") == "tail"][0]["num_classes"]
            ckpt = os.path.join(tmp, name + ".pth")
            torch.save(model.state_dict(), ckpt)

            rng = np.random.default_rng(args.seed + i)
            x = rng.standard_normal((batch, 3, res, res)).astype(np.float32)
            inp = os.path.join(tmp, name + ".in.bin")
            x.astype("<f4").tofile(inp)

            with torch.no_grad():
                t0 = time.monotonic()
                y32 = model(torch.from_numpy(x)).numpy().astype(np.float64)
                t_torch = time.monotonic() - t0
                y64 = model.double()(torch.from_numpy(x).double()).numpy()
                model.float()

            fast, t_fast = run_ours(args.build, cfg_path, ckpt, inp, batch, classes, args.threads, False)
            fast_named, _ = run_ours(args.build, name, ckpt, inp, batch, classes, args.threads, False)
            row = {
                "name": name, "config": cfg_file, "res": res, "params": params,
                "docs_params": documented.get(name),
                "logits_absmax": float(np.max(np.abs(y64))), "logits_std": float(np.std(y64)),
                "torch32_vs_64": rel_err(y32, y64),
                "fast_vs_64": rel_err(fast, y64), "fast_vs_32": rel_err(fast, y32),
                "fast_top5": top5_agree(fast, y64),
                "json_vs_name_identical": bool(np.array_equal(fast, fast_named)),
                "t_torch_s": t_torch, "t_fast_s": t_fast,
            }
            if args.reference == "all":
                ref, t_ref = run_ours(args.build, cfg_path, ckpt, inp, batch, classes, args.threads, True)
                row.update({"ref_vs_64": rel_err(ref, y64), "ref_vs_32": rel_err(ref, y32),
                            "ref_top5": top5_agree(ref, y64), "t_ref_s": t_ref})
            if not args.no_bench:
                turns = max(1, args.rounds * args.runs // args.chunk)
                tt, ot, xcore = bench_interleaved(model, res, args.build, name, ckpt, args.threads,
                                           turns, args.chunk, args.warmup, args.seed)
                row.update({"torch_ms": statistics.median(tt), "torch_min_ms": min(tt),
                            "ours_ms": statistics.median(ot), "ours_min_ms": min(ot),
                            "passes_per_side": len(tt), "chunk": args.chunk,
                            "cross_core_write_ns": xcore})
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)

    print("\nNVIDIA's PyTorch GPUNet vs gst-gpunet CPU (torch %s, %d threads, batch %d for logits)\n"
          % (torch.__version__, args.threads, batch))
    print("| model | params (PyTorch) | = docs/models.md | PyTorch f32 vs f64 | fast vs f64 | fast top-5 "
          "| reference vs f64 | reference top-5 | PyTorch median (min) ms | ours median (min) ms "
          "| PyTorch / ours |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        def t5(k):
            return "%d/%d" % (r[k][0], r[k][2]) + ("" if r[k][0] == r[k][1] else " (sets %d)" % r[k][1])
        docs = "yes" if r["docs_params"] == r["params"] else "**NO (%s)**" % r["docs_params"]
        ref = ("%.1e" % r["ref_vs_64"], t5("ref_top5")) if "ref_vs_64" in r else ("-", "-")
        if "torch_ms" in r:
            bench = ("%.1f (%.1f)" % (r["torch_ms"], r["torch_min_ms"]),
                     "%.1f (%.1f)" % (r["ours_ms"], r["ours_min_ms"]),
                     "%.2f" % (r["torch_ms"] / r["ours_ms"]))
        else:
            bench = ("-", "-", "-")
        print("| %s | %s | %s | %.1e | %.1e | %s | %s | %s | %s | %s | %s |" % (
            r["name"], format(r["params"], ","), docs, r["torch32_vs_64"], r["fast_vs_64"],
            t5("fast_top5"), ref[0], ref[1], *bench))
    print("\nerrors: max|diff| / max(1, max|f64 logits|); top-5: images whose ordered top-5 "
          "equal PyTorch float64's. PyTorch / ours > 1: ours is faster.")
    timed = [r for r in rows if "torch_ms" in r]
    if timed:
        worst = max(timed, key=lambda r: r["ours_ms"] / r["torch_ms"])
        over = [r["name"] for r in timed if r["ours_ms"] > 0.5 * r["torch_ms"]]
        print("ours / PyTorch at most 0.5 on all %d timed: %s (largest: %s %.3f)" % (
            len(timed), "yes" if not over else "NO, over on " + ", ".join(over),
            worst["name"], worst["ours_ms"] / worst["torch_ms"]))
    xc = [(r["name"], r["cross_core_write_ns"]) for r in timed if r.get("cross_core_write_ns") is not None]
    if xc:
        print("cross-core write, ns per line another core read, after each model's passes (about 1: "
              "the cores share an L2, 7: an L3, 28: far apart, ours 15-20%% slower): %s" % ", ".join(
                  "%s %.1f" % (n, v) for n, v in xc))
    bad = [r["name"] for r in rows if not r["json_vs_name_identical"]]
    if bad:
        print("WARNING: --model JSON and built-in name gave different logits for: " + ", ".join(bad))
    print("session wall time: %.0f s" % (time.monotonic() - session_t0))


if __name__ == "__main__":
    main()
