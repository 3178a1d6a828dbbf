#!/usr/bin/env python3
"""gpu_check_lib.py: the comparisons scripts/gpu-check.sh makes, kept here so a CPU test
(tests/test_gpu_check.py) runs them on canned inputs.  Standard library only.

  records A B [--tol T]        two gpunet-tag JSON-lines outputs: the same inputs, frames
                               and segments, top-1 equal on every frame, every score within
                               T (default 1e-3, the fp32 tolerance of the element step).
  latency DOC MEASURED [--slack S]
                               MEASURED lines "model precision gpu_ms" against the
                               "Latency, batch 1" table of DOC (docs/cuda.md): a line is
                               SLOW when more than S (default 0.10) above the table.
  lines A B [--tol T]          two json-output files of gpunetclassify: the same (frame,
                               roi-id) records, top-1 equal, scores within T (1e-3).
  flat SAMPLES [--rss-mib R] [--gpu-mib G]
                               SAMPLES lines "seconds rss_kib gpu_mib" of a long run: after
                               the first quarter (warm-up), the median of the last quarter
                               may exceed the median of the second quarter by at most R MiB
                               of host memory (default 16) and G MiB of GPU memory (4).
  summary ROWS                 ROWS lines "step<TAB>status<TAB>detail" as one table.
  layers A B [--top N]         two `gpunet-bench --per-layer` outputs of one model (A the
                               default path, B another, e.g. --cuda-fused): the ops joined
                               by index, the N (10) where B loses most, and the time of
                               each op kind in both; exit 2 when the tables do not match.
  profile DATA --out MD [--rows ROWS] [--commit C] [--gpu G] [--date D] [--opts O]
          [--alt-opts A]       the gates of `gpu-check.sh --profile short` over DATA (lines
                               written by the script, below): prints one PASS/FAIL line per
                               target, appends a "gate-*" row per target to ROWS, writes the
                               markdown table for docs/cuda.md to MD.  DATA lines:
                                 lat VARIANT MODEL PREC ROUND NET_MS GPU_MS   (ours, alt)
                                 lat torch MODEL PREC ROUND MS
                                 nodes VARIANT forward|network KERNELS MEMCPY MEMSET OTHER TOTAL
                                 thru VARIANT BATCH ROUND NET_MS IMAGES_PER_S GPU_MS
                                 streams decoders|shared|shared2 ROUND SECONDS
                               Values over rounds are medians.  The `alt` variant's gates
                               are shown in the table, marked, and do not fail the run.
Exit status: 0 all within bounds, 1 a difference / a slow model, 2 unreadable input."""
import json
import re
import sys

MODEL_NAMES = {"GPUNet-0": "gpunet-0", "GPUNet-1": "gpunet-1", "GPUNet-2": "gpunet-2",
               "GPUNet-P0": "gpunet-p0", "GPUNet-P1": "gpunet-p1",
               "GPUNet-D1": "gpunet-d1", "GPUNet-D2": "gpunet-d2"}


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def compare_records(a, b, tol):
    """Returns a list of sentences, one per difference (empty: equal)."""
    bad = []
    ka = [r.get("type") for r in a]
    kb = [r.get("type") for r in b]
    if ka != kb:
        bad.append(f"record kinds differ: {len(a)} records ({ka.count('frame')} frames) "
                   f"against {len(b)} ({kb.count('frame')} frames)")
        return bad
    frames = 0
    for i, (x, y) in enumerate(zip(a, b)):
        where = f"record {i + 1} ({x.get('type')} of {x.get('input')!r}"
        where += f", frame {x['frame']})" if "frame" in x else ")"
        if x.get("input") != y.get("input"):
            bad.append(f"{where}: input {x.get('input')!r} against {y.get('input')!r}")
        elif x["type"] == "frame":
            frames += 1
            if x.get("frame") != y.get("frame") or x.get("pts") != y.get("pts"):
                bad.append(f"{where}: frame/pts {x.get('frame')}/{x.get('pts')} against "
                           f"{y.get('frame')}/{y.get('pts')}")
            elif not x.get("ids") or not y.get("ids") or x["ids"][0] != y["ids"][0]:
                bad.append(f"{where}: top-1 {x.get('ids', [None])[:1]} against "
                           f"{y.get('ids', [None])[:1]}")
            else:
                d = max(abs(p - q) for p, q in zip(x["scores"], y["scores"]))
                if len(x["scores"]) != len(y["scores"]) or d > tol:
                    bad.append(f"{where}: scores differ by {d:.3g} (tolerance {tol:g})")
        elif x["type"] == "segment":
            keys = ("label_id", "start_frame", "end_frame")
            if any(x.get(k) != y.get(k) for k in keys):
                bad.append(f"{where}: segment {[x.get(k) for k in keys]} against "
                           f"{[y.get(k) for k in keys]}")
        elif x["type"] == "summary":
            keys = ("status", "frames", "classified")
            if any(x.get(k) != y.get(k) for k in keys):
                bad.append(f"{where}: summary {[x.get(k) for k in keys]} against "
                           f"{[y.get(k) for k in keys]}")
    if frames == 0:
        bad.append("no frame records to compare")
    return bad


def compare_lines(a, b, tol):
    """Sentences for the differences between two element json-output line lists."""
    key = lambda r: (r.get("frame"), r.get("roi-id"))
    ma, mb = {key(r): r for r in a}, {key(r): r for r in b}
    bad = []
    if not a:
        bad.append("no records")
    if set(ma) != set(mb):
        bad.append(f"{len(ma)} (frame, roi-id) records against {len(mb)}; "
                   f"{len(set(ma) ^ set(mb))} not in both")
    for k in sorted(set(ma) & set(mb), key=lambda k: (k[0] or 0, k[1] or 0)):
        x, y = ma[k], mb[k]
        if not x.get("ids") or not y.get("ids") or x["ids"][0] != y["ids"][0]:
            bad.append(f"frame {k[0]} roi {k[1]}: top-1 {x.get('ids', [None])[:1]} against "
                       f"{y.get('ids', [None])[:1]}")
        else:
            d = max(abs(p - q) for p, q in zip(x["scores"], y["scores"]))
            if d > tol:
                bad.append(f"frame {k[0]} roi {k[1]}: scores differ by {d:.3g}")
    return bad


def flat(samples, rss_mib, gpu_mib):
    """(ok, sentence) for samples [(t, rss_kib, gpu_mib)] of a long run."""
    if len(samples) < 8:
        return False, f"only {len(samples)} samples (need 8 or more: a longer run)"
    q = len(samples) // 4
    early, late = samples[q:2 * q], samples[-q:]
    med = lambda xs: sorted(xs)[len(xs) // 2]
    d_rss = (med([s[1] for s in late]) - med([s[1] for s in early])) / 1024.0
    d_gpu = med([s[2] for s in late]) - med([s[2] for s in early])
    ok = d_rss <= rss_mib and d_gpu <= gpu_mib
    return ok, (f"{len(samples)} samples over {samples[-1][0] - samples[0][0]:.0f} s: host RSS "
                f"{d_rss:+.1f} MiB (limit {rss_mib:g}), GPU {d_gpu:+.1f} MiB (limit {gpu_mib:g}) "
                f"from the 2nd to the 4th quarter")


def doc_latency(doc_text):
    """{(model, 'fp16'|'fp32'): gpu_ms} from the 'Latency, batch 1' table: rows
    '| GPUNet-0 | 0.409 / 0.518 | 0.524 | 0.835 / 0.936 | 1.511 |' (ours fp16 GPU / wall,
    PyTorch fp16, ours fp32 GPU / wall, PyTorch fp32; bold marks allowed)."""
    out = {}
    m = re.search(r"\*\*Latency, batch 1\*\*.*?\n(\|.*?)(?:\n\n|\Z)", doc_text, re.S)
    if not m:
        return out
    for line in m.group(1).splitlines():
        cells = [c.strip().replace("*", "") for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] not in MODEL_NAMES:
            continue
        name = MODEL_NAMES[cells[0]]
        for prec, cell in (("fp16", cells[1]), ("fp32", cells[3])):
            try:
                out[(name, prec)] = float(cell.split("/")[0])
            except ValueError:
                pass
    return out


def compare_latency(table, measured_lines, slack):
    """Rows (model, precision, measured, table or None, verdict) and the count of SLOW."""
    rows, slow = [], 0
    for line in measured_lines:
        parts = line.split()
        if len(parts) < 3 or line.startswith("#"):
            continue
        model, prec, ms = parts[0], parts[1], float(parts[2])
        ref = table.get((model, prec))
        if ref is None:
            verdict = "no reference"
        elif ms > ref * (1 + slack):
            verdict = f"SLOW (+{(ms / ref - 1) * 100:.1f} %)"
            slow += 1
        else:
            verdict = f"ok ({(ms / ref - 1) * 100:+.1f} %)"
        rows.append((model, prec, ms, ref, verdict))
    return rows, slow


# the targets of issue 48 (H100), one per gate
TARGET_G0_MS = 0.25          # GPUNet-0 fp16 batch 1 gpu_net_ms, at most
TARGET_KERNELS = 45          # kernel nodes per GPUNet-0 fp16 forward graph, at most
TARGET_B8_IPS = 8000.0       # GPUNet-0 fp16 batch 8 images/s (network alone), at least
TARGET_STREAMS = 0.9         # 8 x 1080p shared engine frames/s over decoders alone, at least
PROFILE_MODELS = ["gpunet-0", "gpunet-1", "gpunet-2", "gpunet-p0", "gpunet-p1",
                  "gpunet-d1", "gpunet-d2"]
DOC_NAMES = {v: k for k, v in MODEL_NAMES.items()}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def read_profile(lines):
    """The DATA lines as dicts of lists: lat[(variant, model, prec)] = [(net, gpu)],
    nodes[(variant, graph)] = [k, memcpy, memset, other, total], thru[(variant, batch)] =
    [(net, ips, gpu)], streams[cfg] = [seconds].  Unreadable lines are skipped."""
    lat, nodes, thru, streams = {}, {}, {}, {}
    for line in lines:
        f = line.split()
        try:
            if len(f) >= 6 and f[0] == "lat" and f[1] == "torch":
                lat.setdefault(("torch", f[2], f[3]), []).append((float(f[5]), None))
            elif len(f) >= 7 and f[0] == "lat":
                lat.setdefault((f[1], f[2], f[3]), []).append((float(f[5]), float(f[6])))
            elif len(f) >= 8 and f[0] == "nodes":
                nodes[(f[1], f[2])] = [int(x) for x in f[3:8]]
            elif len(f) >= 7 and f[0] == "thru":
                thru.setdefault((f[1], int(f[2])), []).append(
                    (float(f[4]), float(f[5]), float(f[6])))
            elif len(f) >= 4 and f[0] == "streams":
                streams.setdefault(f[1], []).append(float(f[3]))
        except ValueError:
            continue
    return lat, nodes, thru, streams


def profile_gates(data, variant, selftest):
    """[(name, measured text, limit text, ok)] for one variant's targets."""
    lat, nodes, thru, streams = data
    gates = []
    net = lambda m, p: median([x[0] for x in lat.get((variant, m, p), [])])
    g0 = net("gpunet-0", "fp16")
    gates.append(("GPUNet-0 fp16 batch 1, gpu_net_ms",
                  f"{g0:.3f} ms" if g0 is not None else "not measured",
                  f"<= {TARGET_G0_MS} ms", g0 is not None and g0 <= TARGET_G0_MS))
    ahead, behind = 0, []
    for m in PROFILE_MODELS:
        for p in ("fp16", "fp32"):
            ours = net(m, p)
            torch = median([x[0] for x in lat.get(("torch", m, p), [])])
            if ours is not None and torch is not None and ours < torch:
                ahead += 1
            else:
                behind.append(f"{DOC_NAMES.get(m, m)} {p}" + (
                    f" {ours:.3f}/{torch:.3f}" if ours is not None and torch is not None
                    else " not measured"))
    n = 2 * len(PROFILE_MODELS)
    gates.append(("ahead of PyTorch, batch 1 (gpu_net_ms against its graph replays)",
                  f"{ahead}/{n}" + (f"; behind or missing: {', '.join(behind)}" if behind else ""),
                  f"{n}/{n}", ahead == n))
    fwd = nodes.get((variant, "forward"))
    netn = nodes.get((variant, "network"))
    gates.append(("kernels per GPUNet-0 fp16 forward (--graph-nodes)",
                  f"{fwd[0]} (network alone {netn[0] if netn else '?'}; {fwd[1]} memcpy, "
                  f"{fwd[2]} memset, {fwd[3]} other nodes)" if fwd else "not measured",
                  f"<= {TARGET_KERNELS}", fwd is not None and fwd[0] <= TARGET_KERNELS))
    b8 = thru.get((variant, 8), [])
    ips = median([x[1] for x in b8])
    ms8 = median([x[0] for x in b8])
    gates.append(("GPUNet-0 fp16 batch 8, images/s (network alone)",
                  f"{ips:.0f} ({ms8:.3f} ms a batch)" if ips is not None else "not measured",
                  f">= {TARGET_B8_IPS:.0f}", ips is not None and ips >= TARGET_B8_IPS))
    dec, sh = median(streams.get("decoders", [])), median(streams.get("shared", []))
    if variant == "ours":
        ratio = dec / sh if dec and sh else None
        gates.append(("8 x 1080p nvh264dec, shared engine batch 8 / decoders alone (frames/s)",
                      f"{ratio:.2f}x ({2400 / sh:.0f} against {2400 / dec:.0f} frames/s)"
                      if ratio is not None else "not measured",
                      f">= {TARGET_STREAMS}x", ratio is not None and ratio >= TARGET_STREAMS))
        gates.append(("self-test, every model fp32 + fp16 (selftest-quick)",
                      selftest or "not run", "passes", selftest == "ok"))
    return gates


def profile_table(data, gates, alt_gates, info):
    """The markdown for docs/cuda.md."""
    lat, nodes, thru, streams = data
    out = [f"**`gpu-check.sh --profile short`** on {info['gpu']}, commit {info['commit']}, "
           f"{info['date']}" + (f"; bench options `{info['opts']}`" if info["opts"] else "")
           + (f"; alt = `{info['alt']}`" if info["alt"] else "") + ":", "",
           "| target | measured | limit | result |", "|---|---|---|---|"]
    for name, measured, limit, ok in gates:
        out.append(f"| {name} | {measured} | {limit} | {'PASS' if ok else 'FAIL'} |")
    for name, measured, limit, ok in alt_gates:
        out.append(f"| alt: {name} | {measured} | {limit} | {'PASS' if ok else 'FAIL'} (not gated) |")
    rounds = max([len(v) for v in lat.values()] + [0])
    out += ["", f"Batch 1, ms, median of {rounds} round(s) (ours `gpu_net_ms`: the network "
            "alone as CUDA graph replays; PyTorch the same way, tools/pytorch_baseline.py; "
            "`gpu_ms`: ours with the input upload and logits copy):", ""]
    variants = ["ours"] + (["alt"] if info["alt"] else [])
    head = ["model"]
    for p in ("fp16", "fp32"):
        head += [f"{v} {p}" for v in variants] + [f"PyTorch {p}", f"ours {p} gpu_ms"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    fmt = lambda x: f"{x:.3f}" if x is not None else "-"
    for m in PROFILE_MODELS:
        row = [DOC_NAMES.get(m, m)]
        for p in ("fp16", "fp32"):
            torch = median([x[0] for x in lat.get(("torch", m, p), [])])
            for v in variants:
                ours = median([x[0] for x in lat.get((v, m, p), [])])
                cell = fmt(ours)
                if ours is not None and torch is not None and ours >= torch:
                    cell = f"**{cell}**"   # behind PyTorch
                row.append(cell)
            row.append(fmt(torch))
            row.append(fmt(median([x[1] for x in lat.get(("ours", m, p), [])])))
        out.append("| " + " | ".join(row) + " |")
    th = []
    for v in variants:
        for b in (1, 8):
            r = thru.get((v, b), [])
            if r:
                th.append(f"{v} batch {b}: {median([x[1] for x in r]):.0f} images/s "
                          f"({median([x[0] for x in r]):.3f} ms network, "
                          f"{median([x[2] for x in r]):.3f} ms with upload)")
    if th:
        out += ["", "GPUNet-0 fp16 throughput: " + "; ".join(th) + "."]
    dec, sh = streams.get("decoders", []), streams.get("shared", [])
    sh2 = streams.get("shared2", [])
    if dec and sh:
        out += ["", f"8 x 300 frames of 1080p H.264: decoders alone {median(dec):.2f} s, with "
                f"one shared gpunetclassify engine (fp16, batch-size 8) {median(sh):.2f} s"
                + (f", with passes-in-flight=2 {median(sh2):.2f} s ({median(dec) / median(sh2):.2f}x"
                   " the decoders' frames/s, not gated)" if sh2 else "")
                + f" (median of {min(len(dec), len(sh))} round(s))."]
    return "\n".join(out) + "\n"


def profile_main(argv):
    opt = lambda k, d="": argv[argv.index(k) + 1] if k in argv and argv.index(k) + 1 < len(argv) else d
    try:
        lines = open(argv[1], encoding="utf-8").read().splitlines()
    except OSError as e:
        print(f"profile: {e}")
        return 2
    data = read_profile(lines)
    selftest = None
    rows_path = opt("--rows")
    if rows_path:
        try:
            for r in open(rows_path, encoding="utf-8"):
                f = r.rstrip("\n").split("\t")
                if f[0] == "selftest-quick" and len(f) > 1:
                    selftest = f[1]
        except OSError:
            pass
    info = {"gpu": opt("--gpu", "an unnamed GPU"), "commit": opt("--commit", "unknown"),
            "date": opt("--date", "?"), "opts": opt("--opts"), "alt": opt("--alt-opts")}
    gates = profile_gates(data, "ours", selftest)
    alt_gates = profile_gates(data, "alt", selftest)[:4] if info["alt"] else []
    table = profile_table(data, gates, alt_gates, info)
    out_path = opt("--out")
    if out_path:
        with open(out_path, "w", encoding="utf-8") as f:
            f.write(table)
    names = ["gate-g0-latency", "gate-vs-pytorch", "gate-kernels", "gate-batch8",
             "gate-streams", "gate-selftest"]
    for (name, measured, limit, ok), key in zip(gates, names):
        print(f"{'PASS' if ok else 'FAIL'}: {name}: {measured} (limit {limit})")
        if rows_path:
            with open(rows_path, "a", encoding="utf-8") as f:
                f.write(f"{key}\t{'ok' if ok else 'FAIL'}\t{'PASS' if ok else 'FAIL'}: "
                        f"{measured} (limit {limit})\n")
    for name, measured, limit, ok in alt_gates:
        print(f"{'PASS' if ok else 'FAIL'} (alt, not gated): {name}: {measured} (limit {limit})")
    return 0 if all(g[3] for g in gates) else 1


LAYER_ROW = re.compile(r"^(\d+)\s+(\d+)\s+(\w+)\s+(\S+ -> \S+)\s+([0-9.]+)\s")


def read_layers(text):
    """op index -> (kind, shape, ms) from a --per-layer table"""
    rows = {}
    for line in text.splitlines():
        m = LAYER_ROW.match(line)
        if m:
            rows[int(m.group(1))] = (m.group(3), m.group(4), float(m.group(5)))
    return rows


def compare_layers(a, b, top):
    """lines: the ops where b is slowest against a, then per kind; None when the
    tables are not of one network"""
    if not a or sorted(a) != sorted(b) or any(a[i][:2] != b[i][:2] for i in a):
        return None
    delta = sorted(a, key=lambda i: a[i][2] - b[i][2])
    lines = [f"{'op':>4} {'kind':<8} {'shape':<26} {'A ms':>8} {'B ms':>8} {'B - A':>8}"]
    for i in delta[:top]:
        kind, shape, ms_a = a[i]
        lines.append(f"{i:>4} {kind:<8} {shape:<26} {ms_a:8.4f} {b[i][2]:8.4f} "
                     f"{b[i][2] - ms_a:+8.4f}")
    kinds = {}
    for i in a:
        k = kinds.setdefault(a[i][0], [0, 0.0, 0.0])
        k[0] += 1
        k[1] += a[i][2]
        k[2] += b[i][2]
    for kind, (n, ms_a, ms_b) in sorted(kinds.items()):
        lines.append(f"kind {kind:<8} {n:3d} ops: A {ms_a:.4f} ms, B {ms_b:.4f} ms, "
                     f"B - A {ms_b - ms_a:+.4f}")
    tot_a, tot_b = sum(v[2] for v in a.values()), sum(v[2] for v in b.values())
    lines.append(f"total: A {tot_a:.4f} ms, B {tot_b:.4f} ms ({tot_b / tot_a if tot_a else 0:.3f}x)")
    return lines


def main(argv):
    if len(argv) >= 3 and argv[0] == "layers":
        top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 10
        try:
            a = read_layers(open(argv[1], encoding="utf-8").read())
            b = read_layers(open(argv[2], encoding="utf-8").read())
        except OSError as e:
            print(f"layers: {e}")
            return 2
        lines = compare_layers(a, b, top)
        if lines is None:
            print(f"layers: {argv[1]} and {argv[2]} are not per-layer tables of one network "
                  f"({len(a)} and {len(b)} ops)")
            return 2
        print("\n".join(lines))
        return 0
    if len(argv) >= 2 and argv[0] == "profile":
        return profile_main(argv)
    if len(argv) >= 3 and argv[0] == "records":
        tol = float(argv[argv.index("--tol") + 1]) if "--tol" in argv else 1e-3
        try:
            a, b = load_jsonl(argv[1]), load_jsonl(argv[2])
        except (OSError, ValueError) as e:
            print(f"records: cannot read the outputs: {e}")
            return 2
        bad = compare_records(a, b, tol)
        n = sum(1 for r in a if r.get("type") == "frame")
        for line in bad[:10]:
            print(line)
        print(f"records {argv[1]} vs {argv[2]}: {n} frames, {len(bad)} differences "
              f"(tolerance {tol:g}): {'FAIL' if bad else 'ok'}")
        return 1 if bad else 0
    if len(argv) >= 3 and argv[0] == "latency":
        slack = float(argv[argv.index("--slack") + 1]) if "--slack" in argv else 0.10
        try:
            table = doc_latency(open(argv[1], encoding="utf-8").read())
            lines = open(argv[2], encoding="utf-8").read().splitlines()
        except OSError as e:
            print(f"latency: {e}")
            return 2
        if not table:
            print(f"latency: no 'Latency, batch 1' table found in {argv[1]}")
            return 2
        rows, slow = compare_latency(table, lines, slack)
        print(f"{'model':<10} {'prec':<5} {'gpu ms':>8} {'docs ms':>8}  verdict")
        for model, prec, ms, ref, verdict in rows:
            print(f"{model:<10} {prec:<5} {ms:8.3f} {ref if ref else float('nan'):8.3f}  {verdict}")
        print(f"latency: {len(rows)} measured, {slow} more than {slack * 100:.0f} % slower "
              "than docs/cuda.md")
        return 1 if slow or not rows else 0
    if len(argv) >= 3 and argv[0] == "lines":
        tol = float(argv[argv.index("--tol") + 1]) if "--tol" in argv else 1e-3
        try:
            bad = compare_lines(load_jsonl(argv[1]), load_jsonl(argv[2]), tol)
        except (OSError, ValueError) as e:
            print(f"lines: cannot read the outputs: {e}")
            return 2
        for line in bad[:10]:
            print(line)
        print(f"detail: {argv[1]} vs {argv[2]}: {len(bad)} differences (tolerance {tol:g})")
        return 1 if bad else 0
    if len(argv) >= 2 and argv[0] == "flat":
        rss = float(argv[argv.index("--rss-mib") + 1]) if "--rss-mib" in argv else 16.0
        gpu = float(argv[argv.index("--gpu-mib") + 1]) if "--gpu-mib" in argv else 4.0
        try:
            samples = [tuple(float(v) for v in l.split()[:3])
                       for l in open(argv[1], encoding="utf-8") if l.strip() and l[0] != "#"]
        except (OSError, ValueError) as e:
            print(f"flat: {e}")
            return 2
        ok, text = flat(samples, rss, gpu)
        print(f"detail: {'ok' if ok else 'FAIL'}: {text}")
        return 0 if ok else 1
    if len(argv) == 2 and argv[0] == "summary":
        try:
            rows = [l.rstrip("\n").split("\t") for l in open(argv[1], encoding="utf-8")]
        except OSError as e:
            print(f"summary: {e}")
            return 2
        rows = [r + [""] * (3 - len(r)) for r in rows if r and r[0]]
        w = max([len(r[0]) for r in rows] + [4])
        print(f"{'step':<{w}}  {'result':<7}  detail")
        print(f"{'-' * w}  {'-' * 7}  {'-' * 30}")
        for r in rows:
            print(f"{r[0]:<{w}}  {r[1]:<7}  {r[2]}")
        return 1 if any(r[1] == "FAIL" for r in rows) else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
