#!/usr/bin/env python3
"""pytorch_baseline.py: the PyTorch GPU latency baseline of docs/cuda.md, reproducible from
this repository.  GPUNet is built from NVIDIA's architecture JSON with plain torch.nn,
following the structure of NVIDIA's GPUNet builder (DeepLearningExamples,
PyTorch/Classification/GPUNet: Prologue / ConvBnAct / EdgeResidual / InvertedResidual /
Epilogue and their distilled forms), with the same module names, so NVIDIA's checkpoints
load into it (the same rules models/arch_graph.c implements: make_divisible mid channels, SE
widths with Python's round, padding per module kind, BatchNorm eps per kind, residuals).
timm is not needed.

Timing, as in the docs/cuda.md table: batch B, eval, no_grad, channels_last, cuDNN
benchmark on, TF32 off, fp16 (model.half()) or fp32, the network only (input already on the
GPU), one CUDA graph captured after a warm-up, then the median over --groups groups of
--replays replays, each group timed with CUDA events.  With --tensorrt (needs the tensorrt
Python package) the same model is also exported to ONNX and timed with a TensorRT engine in
fp16 at each batch.

The seven architectures come from this repository's built-in table (models/zoo.c, read as
text: one C row per layer) unless --configs names a directory of NVIDIA's JSON files.

  tools/pytorch_baseline.py [--configs DIR] [--models gpunet-0,...] [--batch 1,8]
      [--precision fp16,fp32] [--tensorrt] [--self-check]
Output: one line per measurement, "model precision batch ms" (what scripts/gpu-check.sh
compares), after a header line starting with '#'.  --self-check (CPU, no GPU needed) builds
each model, prints its parameter count and checks the forward shape: the CPU test of this
script.  Exit 0, 1 on a failed check, 2 on bad arguments, 77 when torch (or, for timing, a
CUDA device) is missing."""
import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile

# JSON file -> the engine's built-in name (docs/models.md)
CONFIGS = {"gpunet-0": "0.65ms.json", "gpunet-1": "0.85ms.json", "gpunet-2": "1.75ms.json",
           "gpunet-p0": "0.5ms-D.json", "gpunet-p1": "0.8ms-D.json",
           "gpunet-d1": "1.25ms-D.json", "gpunet-d2": "2.25ms-D.json"}

try:
    import torch
    from torch import nn
except ImportError:
    torch = None
    nn = None


def make_divisible(v, divisor=8):
    """timm's rule (models/arch_graph.c gpunet_make_divisible)."""
    n = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if n < 0.9 * v:
        n += divisor
    return n


def act_module(name):
    return {"relu": nn.ReLU, "swish": nn.SiLU, "silu": nn.SiLU}[name](inplace=True)


if nn is not None:
    class SqueezeExcite(nn.Module):
        """se.conv_reduce -> act -> se.conv_expand -> sigmoid gate."""
        def __init__(self, channels, reduced, act):
            super().__init__()
            self.conv_reduce = nn.Conv2d(channels, reduced, 1, bias=True)
            self.act = act_module(act)
            self.conv_expand = nn.Conv2d(reduced, channels, 1, bias=True)

        def forward(self, x):
            s = x.mean((2, 3), keepdim=True)
            return x * torch.sigmoid(self.conv_expand(self.act(self.conv_reduce(s))))

    class Block(nn.Module):
        """A sequence of named sub-modules plus an optional residual (the input added to
        the output when the block keeps shape); `order` is the forward order."""
        def __init__(self, parts, residual):
            super().__init__()
            self.order = [name for name, _ in parts]
            for name, mod in parts:
                self.add_module(name, mod)
            self.residual = residual

        def forward(self, x):
            y = x
            for name in self.order:
                y = getattr(self, name)(y)
            return y + x if self.residual else y

    class GPUNet(nn.Module):
        """NVIDIA's top level: one Sequential named `network`."""
        def __init__(self):
            super().__init__()
            self.network = nn.Sequential()

        def forward(self, x):
            return self.network(x)

    class Seq(nn.Module):
        """A `net` or `body` Sequential inside a block (names net.0, net.1, ...)."""
        def __init__(self, attr, layers, residual=False):
            super().__init__()
            setattr(self, attr, nn.Sequential(*layers))
            self.attr = attr
            self.residual = residual

        def forward(self, x):
            y = getattr(self, self.attr)(x)
            return y + x if self.residual else y


def conv(cin, cout, k, stride=1, pad=0, groups=1, bias=False):
    return nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=bias)


def block(layer, distill):
    """The torch.nn module and its name for one JSON layer (None for 'data')."""
    t = layer["layer_type"]
    cin, cout = layer.get("num_in_channels"), layer.get("num_out_channels")
    k, s = layer.get("kernel_size", 3), layer.get("stride", 1)
    keeps = cin == cout and s == 1
    if not distill:
        eps, act = 1e-3, layer.get("act", "swish")
        if t == "head":
            return Seq("net", [conv(cin, cout, 3, 2, 1), nn.BatchNorm2d(cout, eps), act_module(act)])
        if t == "conv":
            return Block([("conv", conv(cin, cout, k, s, ((s - 1) + (k - 1)) // 2)),
                          ("bn1", nn.BatchNorm2d(cout, eps)), ("act", act_module(act))], False)
        if t in ("fused_irb", "irb"):
            e = layer["expansion"]
            mid = make_divisible(cin * e)
            se = [("se", SqueezeExcite(mid, round(mid * (0.25 / e)), act))] if layer["use_se"] else []
            if t == "fused_irb":
                # 'same' padding: static when stride 1 and k odd, else 0 (NVIDIA's builder)
                pad = (k - 1) // 2 if s == 1 and (k - 1) % 2 == 0 else 0
                return Block([("conv_exp", conv(cin, mid, k, s, pad)),
                              ("bn1", nn.BatchNorm2d(mid, eps)), ("act1", act_module(act))] + se +
                             [("conv_pwl", conv(mid, cout, 1)), ("bn2", nn.BatchNorm2d(cout, eps))],
                             keeps)
            return Block([("conv_pw", conv(cin, mid, 1)), ("bn1", nn.BatchNorm2d(mid, eps)),
                          ("act1", act_module(act)),
                          ("conv_dw", conv(mid, mid, k, s, ((s - 1) + (k - 1)) // 2, groups=mid)),
                          ("bn2", nn.BatchNorm2d(mid, eps)), ("act2", act_module(act))] + se +
                         [("conv_pwl", conv(mid, cout, 1)), ("bn3", nn.BatchNorm2d(cout, eps))],
                         keeps)
        if t == "tail":
            return Seq("net", [conv(cin, cout, 1), nn.BatchNorm2d(cout, eps), nn.ReLU(inplace=True),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Identity(),
                               nn.Linear(cout, layer["num_classes"])])
    else:
        eps = 1e-5
        relu = lambda: nn.ReLU(inplace=True)
        if t == "head":
            return Seq("net", [conv(cin, cout, 3, 2, 1), nn.BatchNorm2d(cout, eps), relu()])
        if t == "head_large":
            return Seq("net", [conv(cin, cout, 3, 2, 1), nn.BatchNorm2d(cout, eps), relu(),
                               conv(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout, eps), relu(),
                               conv(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout, eps), relu()])
        if t == "fused_irb":
            mid = int(cin * layer["expansion"])
            return Seq("body", [conv(cin, mid, k, s, k // 2), nn.BatchNorm2d(mid, 1e-3), relu(),
                                conv(mid, cout, 1), nn.BatchNorm2d(cout, 1e-3)], keeps)
        if t == "irb":
            mid, g = int(cin * layer["expansion"]), layer.get("groups", 1)
            return Seq("body", [conv(cin, mid, 1, groups=g), nn.BatchNorm2d(mid, eps), relu(),
                                conv(mid, mid, k, s, k // 2, groups=mid), nn.BatchNorm2d(mid, eps),
                                relu(), conv(mid, cout, 1, groups=g), nn.BatchNorm2d(cout, eps)],
                       keeps)
        if t == "tail":
            return Seq("net", [conv(cin, 1152, 1), nn.BatchNorm2d(1152, eps), relu(),
                               nn.AdaptiveAvgPool2d(1), conv(1152, cout, 1), relu(),
                               nn.Flatten(), nn.Identity(), nn.Linear(cout, layer["num_classes"])])
    raise ValueError(f"layer type '{t}' is not a GPUNet layer of a "
                     f"{'distilled' if distill else 'non-distilled'} model")


def block_name(layer, index, distill):
    """NVIDIA's module names (index: the layer's 1-based position in the JSON list)."""
    t = layer["layer_type"]
    if distill:
        return {"head": "head:", "head_large": "head:", "tail": "tail:"}.get(
            t, f"stage: {layer.get('stage')} {t}{index}")
    if t == "head":
        return f"head: {index}"
    if t == "tail":
        return f" layer{index}"
    return f"stage: {layer.get('stage')} layer{index}"


def build(config):
    """(model, resolution) from a parsed architecture JSON (a list of layers)."""
    if not config or config[0].get("layer_type") != "data":
        raise ValueError("the first layer of a GPUNet JSON must be {\"layer_type\": \"data\", ...}")
    distill = bool(config[0].get("distill", False))
    model = GPUNet()
    for i, layer in enumerate(config[1:], 2):
        model.network.add_module(block_name(layer, i, distill), block(layer, distill))
    return model.eval(), int(config[0]["img_resolution"])


ZOO_ROW = re.compile(r"^\s*(HEAD|CONV|IRB|FIRB|DHEAD|DHEADL|DIRB|DFIRB|TAIL)\s*\(([^)]*)\)")
ZOO_MODEL = re.compile(r"^/\* (gpunet-\w+) \([^)]*\): (\d+) x \d+, (not distilled|distilled) \*/")


def zoo_configs(path):
    """{name: NVIDIA-format config list} from models/zoo.c's rows (its macros: HEAD(i, o, act),
    CONV(i, o, k, s, act, stage), IRB/FIRB(i, o, k, s, e, se, act, stage), DHEAD/DHEADL(i, o,
    stage), DIRB/DFIRB(i, o, k, s, e, groups, stage), TAIL(i, o, classes))."""
    acts = {"R": "relu", "S": "swish"}
    out, cur = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ZOO_MODEL.match(line)
            if m:
                cur = [{"layer_type": "data", "img_resolution": int(m.group(2)),
                        "distill": m.group(3) == "distilled"}]
                out[m.group(1)] = cur
                continue
            m = ZOO_ROW.match(line)
            if not m or cur is None:
                continue
            kind = m.group(1)
            a = [x.strip() for x in m.group(2).split(",")]
            num = lambda x: float(x) if "." in x else int(x)
            io = {"num_in_channels": int(a[0]), "num_out_channels": int(a[1])}
            if kind == "HEAD":
                cur.append({"layer_type": "head", **io, "act": acts[a[2]]})
            elif kind in ("DHEAD", "DHEADL"):
                cur.append({"layer_type": "head" if kind == "DHEAD" else "head_large", **io,
                            "stage": int(a[2])})
            elif kind == "CONV":
                cur.append({"layer_type": "conv", **io, "kernel_size": int(a[2]),
                            "stride": int(a[3]), "act": acts[a[4]], "stage": int(a[5])})
            elif kind in ("IRB", "FIRB"):
                cur.append({"layer_type": "irb" if kind == "IRB" else "fused_irb", **io,
                            "kernel_size": int(a[2]), "stride": int(a[3]),
                            "expansion": num(a[4]), "use_se": a[5] == "1", "act": acts[a[6]],
                            "stage": int(a[7])})
            elif kind in ("DIRB", "DFIRB"):
                cur.append({"layer_type": "irb" if kind == "DIRB" else "fused_irb", **io,
                            "kernel_size": int(a[2]), "stride": int(a[3]),
                            "expansion": num(a[4]), "groups": int(a[5]), "stage": int(a[6])})
            elif kind == "TAIL":
                cur.append({"layer_type": "tail", **io, "num_classes": int(a[2])})
    return out


def time_cuda_graph(model, x, groups, replays):
    """Median milliseconds per forward pass: one CUDA graph, `groups` groups of `replays`."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(5):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        model(x)
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(groups):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(replays):
            g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / replays)
    return statistics.median(times)


def time_tensorrt(model, res, batch, path, groups, replays):
    """Median ms of a TensorRT fp16 engine built from an ONNX export of `model`."""
    import tensorrt as trt
    x = torch.randn(batch, 3, res, res)
    torch.onnx.export(model.float().cpu(), x, path, opset_version=17, input_names=["input"],
                      output_names=["logits"])
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    # explicit batch: a flag before TensorRT 10, the only mode from 10 on
    flag = getattr(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH", None)
    network = builder.create_network(0 if flag is None else 1 << int(flag))
    parser = trt.OnnxParser(network, logger)
    with open(path, "rb") as f:
        if not parser.parse(f.read()):
            raise RuntimeError("TensorRT cannot parse the ONNX export: " +
                               "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors)))
    cfg = builder.create_builder_config()
    cfg.set_flag(trt.BuilderFlag.FP16)
    engine = trt.Runtime(logger).deserialize_cuda_engine(builder.build_serialized_network(network, cfg))
    ctx = engine.create_execution_context()
    inp = torch.randn(batch, 3, res, res, device="cuda")
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    ctx.set_tensor_address(names[0], inp.data_ptr())
    out = torch.empty(tuple(ctx.get_tensor_shape(names[1])), device="cuda")
    ctx.set_tensor_address(names[1], out.data_ptr())
    stream = torch.cuda.Stream()
    for _ in range(20):
        ctx.execute_async_v3(stream.cuda_stream)
    stream.synchronize()
    times = []
    for _ in range(groups):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        for _ in range(replays):
            ctx.execute_async_v3(stream.cuda_stream)
        b.record(stream)
        b.synchronize()
        times.append(a.elapsed_time(b) / replays)
    return statistics.median(times)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", help="directory of NVIDIA's GPUNet JSON files (default: the "
                    "architectures of this repository's models/zoo.c)")
    ap.add_argument("--models", default=",".join(CONFIGS), help="comma list (default: all seven)")
    ap.add_argument("--batch", default="1", help="comma list of batch sizes (1)")
    ap.add_argument("--precision", default="fp16,fp32", help="fp16 and/or fp32")
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--replays", type=int, default=50)
    ap.add_argument("--tensorrt", action="store_true", help="also time TensorRT fp16")
    ap.add_argument("--self-check", action="store_true",
                    help="build each model on the CPU, print parameter counts, check shapes")
    a = ap.parse_args(argv)
    if torch is None:
        print("pytorch_baseline: torch is not installed (pip install torch): skipped")
        return 77
    models = [m for m in a.models.split(",") if m]
    unknown = [m for m in models if m not in CONFIGS]
    if unknown:
        print(f"pytorch_baseline: unknown model(s) {unknown}; choose from {list(CONFIGS)}")
        return 2
    try:
        batches = [int(b) for b in a.batch.split(",")]
        precisions = a.precision.split(",")
        assert all(b >= 1 for b in batches) and set(precisions) <= {"fp16", "fp32"}
    except (ValueError, AssertionError):
        print("pytorch_baseline: --batch takes whole numbers >= 1 (1,8) and --precision "
              "fp16 and/or fp32")
        return 2
    built = {}
    zoo_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "zoo.c")
    try:
        zoo = None if a.configs else zoo_configs(zoo_path)
    except OSError as e:
        print(f"pytorch_baseline: cannot read the built-in architectures ({e}); pass --configs "
              "with NVIDIA's GPUNet JSON directory")
        return 2
    for m in models:
        path = os.path.join(a.configs, CONFIGS[m]) if a.configs else f"{zoo_path} ({m})"
        try:
            if a.configs:
                with open(path) as f:
                    config = json.load(f)
            elif m in zoo:
                config = zoo[m]
            else:
                raise ValueError("not found in the built-in table")
            built[m] = build(config)
        except (OSError, ValueError, KeyError, IndexError) as e:
            print(f"pytorch_baseline: {path}: {e}")
            return 2
    if a.self_check:
        bad = 0
        for m, (model, res) in built.items():
            n = sum(p.numel() for p in model.parameters())
            with torch.no_grad():
                y = model(torch.randn(1, 3, res, res))
            ok = tuple(y.shape) == (1, 1000) and bool(torch.isfinite(y).all())
            bad += not ok
            print(f"{m} params={n} resolution={res} output={tuple(y.shape)} {'ok' if ok else 'FAIL'}")
        return 1 if bad else 0
    if not torch.cuda.is_available():
        print("pytorch_baseline: no CUDA device for torch: nothing timed")
        return 77
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}; model precision batch ms (median of {a.groups} "
          f"groups of {a.replays} CUDA graph replays, channels_last, no TF32)")
    rc = 0
    for m, (model, res) in built.items():
        for p in precisions:
            dt = torch.float16 if p == "fp16" else torch.float32
            net = model.to("cuda", dt).to(memory_format=torch.channels_last)
            for b in batches:
                x = torch.randn(b, 3, res, res, device="cuda", dtype=dt).to(
                    memory_format=torch.channels_last)
                print(f"{m} {p} {b} {time_cuda_graph(net, x, a.groups, a.replays):.3f}", flush=True)
        if a.tensorrt:
            for b in batches:
                try:
                    onnx = os.path.join(tempfile.gettempdir(), f"pytorch_baseline_{m}_{b}.onnx")
                    ms = time_tensorrt(model, res, b, onnx, a.groups, a.replays)
                    print(f"{m} tensorrt-fp16 {b} {ms:.3f}", flush=True)
                except Exception as e:  # TensorRT's own errors are many kinds
                    print(f"# {m} tensorrt-fp16 batch {b}: failed: {e}")
                    rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
