#!/usr/bin/env python3
"""gpunet-bench's command line: the final machine-readable line, --per-layer's table, the
--stdin-runs protocol that tools/compare_pytorch.py drives (ready, one times_ms= line per
request, a summary over every timed pass), and bad invocations failing with a sentence."""
import os, re, subprocess, sys

bench, data = sys.argv[1], sys.argv[2]
model = os.path.join(data, "fixtures", "tiny-a.json")
passed = failed = 0

def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)

FINAL = re.compile(r"^model=(\S+) batch=(\d+) threads=(\d+) median_ms=([\d.]+) min_ms=([\d.]+) "
                   r"gflops=([\d.]+) achieved_gflops_s=([\d.]+)$")

def run(args, stdin=None, peak=False):
    # --no-peak: the sgemm reference costs 1-2 s a run; the runs that read it keep it
    return subprocess.run([bench, "--model", model, "--preprocess-runs", "0"]
                          + ([] if peak else ["--no-peak"]) + args,
                          input=stdin, capture_output=True, text=True, timeout=300)

# plain: the last line in the format, min <= median
p = run(peak=True, args=["--batch", "2", "--threads", "1", "--runs", "5", "--warmup", "1"])
check(p.returncode == 0, f"plain run: exit {p.returncode}: {p.stderr}")
m = FINAL.match(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else None
check(m is not None, f"plain run: last line {p.stdout.strip().splitlines()[-1:]}")
if m:
    check(m.group(2) == "2" and m.group(3) == "1", f"batch/threads echoed: {m.group(0)}")
    check(0 < float(m.group(5)) <= float(m.group(4)), f"0 < min <= median: {m.group(0)}")
check("cross_core_write_ns_per_line=" not in p.stdout, "one thread: no cross-core line")

# --per-layer: a row per op and the sum line
p = run(["--runs", "3", "--warmup", "1", "--per-layer", "--threads", "2"])
check(p.returncode == 0, f"--per-layer: exit {p.returncode}: {p.stderr}")
rows = [l for l in p.stdout.splitlines() if re.match(r"^\d+\s+\d+\s+\w+\s+\d+x\d+x\d+ -> ", l)]
check(len(rows) >= 3, f"--per-layer: {len(rows)} op rows")
check("sum of per-op medians:" in p.stdout, "--per-layer: sum line")
# gpu-check's `layers` comparison reads this table: every op row, joined with itself
table = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"per-layer-{os.getpid()}.txt")
with open(table, "w") as f:
    f.write(p.stdout)
lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "gpu_check_lib.py")
q = subprocess.run([sys.executable, lib, "layers", table, table], capture_output=True, text=True)
os.unlink(table)
check(q.returncode == 0 and "(1.000x)" in q.stdout
      and sum(int(m) for m in re.findall(r"^kind \w+ +(\d+) ops", q.stdout, re.M)) == len(rows),
      f"gpu_check_lib.py layers reads the table's {len(rows)} ops: {q.returncode} {q.stdout[-300:]!r}")
# two threads with oneDNN built: the cross-core write probe's line, two non-negative numbers
if "(built without oneDNN)" not in p.stdout:
    xc = re.search(r"^cross_core_write_ns_per_line=([\d.]+) own_write_ns_per_line=([\d.]+)$",
                   p.stdout, re.M)
    check(xc is not None, f"two threads: cross-core line in {p.stdout[-400:]!r}")

# --stdin-runs: 3 then 2 passes, then 0; the summary covers all 5
p = run(["--stdin-runs", "--warmup", "1"], "3\n2\n0\n")
check(p.returncode == 0, f"--stdin-runs: exit {p.returncode}: {p.stderr}")
lines = p.stdout.splitlines()
check(lines[:1] == ["ready"], f"--stdin-runs: first line {lines[:1]}")
tl = [l for l in lines if l.startswith("times_ms=")]
check([len(l.split("=", 1)[1].split(",")) for l in tl] == [3, 2], f"--stdin-runs: {tl}")
m = FINAL.match(lines[-1]) if lines else None
check(m is not None, f"--stdin-runs: last line {lines[-1:]}")
if m and len(tl) == 2:
    ts = sorted(float(t) for l in tl for t in l.split("=", 1)[1].split(","))
    check(abs(float(m.group(5)) - ts[0]) < 0.0015, f"--stdin-runs: min {m.group(5)} of {ts}")
    check(abs(float(m.group(4)) - ts[2]) < 0.0015, f"--stdin-runs: median {m.group(4)} of {ts}")
# end of input finishes like 0
p = run(["--stdin-runs", "--warmup", "0"], "2\n")
check(p.returncode == 0 and FINAL.match(p.stdout.strip().splitlines()[-1]),
      f"--stdin-runs to end of input: exit {p.returncode}: {p.stderr}")

# --backend by the registry's names: the backend= line names the one that ran
BACKEND = re.compile(r"^backend=(\S+) images_per_s=", re.M)
for name in ("cpu", "cpu-ref"):
    p = run(["--backend", name, "--threads", "1", "--runs", "2", "--warmup", "0"], peak=True)
    b = BACKEND.search(p.stdout)
    check(p.returncode == 0 and b is not None and
          (b.group(1) == name or (name == "cpu" and b.group(1) == "cpu-ref"
                                  and "sgemm_2048_gflops_s=n/a" in p.stdout)),
          f"--backend {name}: exit {p.returncode}, {b.group(0) if b else p.stderr[:200]!r}")

# --threads as a list: the whole benchmark once per value, in order
p = run(["--threads", "1,2", "--runs", "2", "--warmup", "0", "--preprocess-runs", "0"])
finals = [FINAL.match(l) for l in p.stdout.splitlines() if FINAL.match(l)]
check(p.returncode == 0 and [m.group(3) for m in finals] == ["1", "2"],
      f"--threads 1,2: one final line per value: exit {p.returncode} {p.stdout[-300:]!r}")

# --ab: two plans of the fast CPU backend in turn, one ab_ line with the ratios' quartiles
# in order, and A's summary as the last line (built without oneDNN: refused with exit 2)
AB = re.compile(r"^ab_pairs=(\d+) spec=(\S+) a_median_ms=([\d.]+) b_median_ms=([\d.]+) "
                r"b_over_a=([\d.]+) q25=([\d.]+) q75=([\d.]+)$", re.M)
p = run(["--ab", "winograd=off", "--runs", "5", "--warmup", "1"], peak=True)
if "(built without oneDNN)" in p.stdout or "fast CPU backend" in p.stderr:
    check(p.returncode == 2 and "--ab" in p.stderr, f"--ab without oneDNN: {p.stderr[:200]!r}")
else:
    ab = AB.search(p.stdout)
    check(p.returncode == 0 and ab is not None, f"--ab: exit {p.returncode}, {p.stdout[-400:]!r} "
          f"{p.stderr[:200]!r}")
    if ab:
        check(ab.group(1) == "5" and ab.group(2) == "winograd=off", f"--ab echoed: {ab.group(0)}")
        q25, med, q75 = float(ab.group(6)), float(ab.group(5)), float(ab.group(7))
        check(0 < q25 <= med <= q75, f"--ab quartiles in order: {ab.group(0)}")
        check(float(ab.group(3)) > 0 and float(ab.group(4)) > 0, f"--ab medians: {ab.group(0)}")
    lines = p.stdout.strip().splitlines()
    check(bool(lines) and FINAL.match(lines[-1]) is not None, f"--ab: last line {lines[-1:]}")

# bad invocations: exit 2 with a sentence naming the problem
for args, stdin, word in (
        (["--backend", "fast"], None, "cpu, cuda, cpu-ref"),
        (["--backend", "auto"], None, "cpu-ref"),
        (["--stdin-runs"], "3\nabc\n", "abc"),
        (["--stdin-runs"], "-4\n", "-4"),
        (["--stdin-runs"], "", "no timed passes"),
        (["--stdin-runs", "--per-layer"], "1\n", "--per-layer"),
        (["--runs", "0"], None, "--runs"),
        (["--threads", "x"], None, "--threads"),
        (["--threads", "1,x"], None, "list of them"),
        (["--threads", "1,,2"], None, "list of them"),
        (["--ab", "winograd=sideways"], None, "sideways"),
        (["--ab", "pw=onednn", "--per-layer"], None, "--per-layer"),
        (["--ab", "pw=onednn", "--backend", "cpu-ref"], None, "fast CPU backend")):
    p = run(args, stdin)
    check(p.returncode == 2 and word in p.stderr,
          f"{args} {stdin!r}: exit {p.returncode}, stderr {p.stderr[:200]!r}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
