#!/usr/bin/env python3
"""The logic of tools/contention_bench.py and tools/compare_runtimes.py without their venv
or a build: the tables and ratios from made-up timings, the alternating engine order, the
parsing of the tools' output, the competing processes started and all stopped, and the
venv's cache directory.  Prints "N passed, N failed"."""
import os
import sys

tools = sys.argv[1]
sys.path.insert(0, tools)
import compare_runtimes as cr  # noqa: E402
import contention_bench as cb  # noqa: E402
import runtime_venv as rv  # noqa: E402

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)


# gpunet-bench's and the timers' summary lines
check(cb.parse_median("model=gpunet-0 batch=1 threads=2 median_ms=23.306 min_ms=23.2") == 23.306,
      "parse gpunet-bench")
check(cr.parse_median("median_ms=17.5 note=openvino") == 17.5, "parse timer")
check(cb.parse_median("no number") is None, "parse nothing")

# contention: ours/ORT per load and busy/quiet, medians over rounds
res = {("m", "quiet", "ours:auto"): [10, 12, 11], ("m", "quiet", "ort"): [20, 22, 21],
       ("m", "busy", "ours:auto"): [13, 14, 15], ("m", "busy", "ort"): [21, 22, 23],
       ("m", "quiet", "ours:spin"): [10], ("m", "busy", "ours:spin"): [80]}
rows = {(m, w): (q, b, rel) for m, w, q, b, rel in cb.ratio_rows(res, ["m"], ["auto", "spin"])}
q, b, rel = rows[("m", "auto")]
check(abs(q - 11 / 21) < 1e-9 and abs(b - 14 / 22) < 1e-9, "ratios %s %s" % (q, b))
check(abs(rel - (14 / 22) / (11 / 21)) < 1e-9, "busy over quiet %s" % rel)
q, b, rel = rows[("m", "spin")]
check(abs(b - 80 / 22) < 1e-9 and rel > 1.2, "spin collapses: %s" % rel)
rows = cb.ratio_rows({("m", "quiet", "ort"): [1.0]}, ["m"], ["auto"])
check(rows == [("m", "auto", None, None, None)], "missing timings give no ratio: %s" % rows)
check(cb.summary([3.0, 1.0, 2.0]) == "1.0 / 2.0 / 3.0" and cb.summary([]) == "-", "summary")

# --waits values: an option, or a spin count in libgomp's environment
os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
opt, env = cb.wait_env("passive")
check(opt == "passive" and "OMP_WAIT_POLICY" not in env and "GOMP_SPINCOUNT" not in env,
      "wait=passive: %s" % opt)
opt, env = cb.wait_env("spins=1000")
check(opt == "auto" and env.get("GOMP_SPINCOUNT") == "1000", "spins=1000: %s" % opt)
del os.environ["OMP_WAIT_POLICY"]

# the competing processes: started, and none left running
with cb.Busy(2) as busy:
    pids = [p.pid for p in busy.procs]
    check(len(pids) == 2 and all(p.poll() is None for p in busy.procs), "2 busy processes run")
for pid in pids:
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    check(not alive, "busy process %d still runs" % pid)

# runtime comparison: order flips each round, ratios are ours over the others
check(cr.engine_order(["a", "b", "c"], 0) == ["a", "b", "c"]
      and cr.engine_order(["a", "b", "c"], 1) == ["c", "b", "a"], "engine order")
lines = cr.table({("g", "ours-f32"): [10, 11, 12], ("g", "ort-f32"): [20, 22, 24],
                  ("g", "ov-f32"): [10], ("g", "ov-default"): [5]}, ["g"], cr.ENGINES)
check(len(lines) == 3 and lines[0].count("|") == lines[2].count("|"), "table shape %s" % lines)
check("11.0 (10.0-12.0)" in lines[2] and "| 0.50 | 1.10 | 2.20 |" in lines[2],
      "table row %s" % lines[2])
check(all(cr.LABELS.get(e) for e in cr.ENGINES), "every engine has a label")

# --interleave: the turns' span in the table, the per-turn ratio quartiles, the server
# protocol (a child process that answers as gpunet-bench --stdin-runs does), the server
# script is Python
res = {("g", "ours-f32"): [10, 11, 12, 13], ("g", "ours-f32", "turns"): [10.5, 12.5],
       ("g", "ort-f32"): [20], ("g", "ort-f32", "turns"): [20],
       ("g", "ov-f32"): [10], ("g", "ov-f32", "turns"): [10],
       ("g", "ov-default"): [5], ("g", "ov-default", "turns"): [5]}
row = cr.table(res, ["g"], cr.ENGINES, turns=True)[2]
check("11.5 (10.5-12.5)" in row, "interleaved table row %s" % row)
check(cr.quartiles([4, 1, 3, 2, 5]) == (2, 3, 4), "quartiles %s" % (cr.quartiles([4, 1, 3, 2, 5]),))
compile(cr.SERVER, "server.py", "exec")
fake = ("import sys\nprint('ready note=fake', flush=True)\nfor l in sys.stdin:\n"
        "    n = int(l)\n    if n <= 0: break\n"
        "    print('times_ms=' + ','.join(str(i + 1.5) for i in range(n)), flush=True)\n")
srv = cr.Server([sys.executable, "-c", fake])
check(srv.note == "fake", "server note %s" % srv.note)
check(srv.run(3) == [1.5, 2.5, 3.5], "server times")
srv.close()
check(srv.p.returncode == 0, "server ended: %s" % srv.p.returncode)

# the venv's cache directory and one venv per package set
os.environ["GPUNET_CACHE_DIR"] = "/nonexistent/cache"
check(rv.cache_dir() == "/nonexistent/cache", "GPUNET_CACHE_DIR")
check(rv.venv_dir(["b", "a"]) == rv.venv_dir(["a", "b"]) != rv.venv_dir(["a"]), "venv per set")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
