#!/usr/bin/env python3
"""test-summary.py [--cpuinfo FILE] LOG_OR_BUILD_DIR...: one line over meson's test logs (a testlog*.json
file, or a build directory for its meson-logs/testlog.json), skips counted apart:
"N passed, S skipped, F failed" (CI reads the passed and failed counts of the last
line), after a FAILED line per failed test. Exit 1 when a test failed or a log is
missing.

Before it, the CPU code paths of our kernels the suite ran and those it did not, from
what the tests themselves report: a test program that runs one (tests/check.h) prints
"isa-paths: ran=avx512,portable not-run=avx2", not-run naming what it would have run on
a CPU that has it. A path is "ran" when a test that was not skipped ran it (each
beside a reference it is compared with); for one not run, the reason comes from this
CPU's flags (/proc/cpuinfo, or FILE) and from the tests that reported it not run."""
import json
import os
import platform
import re
import sys

# the paths the suite speaks of: (key in the tests' lines, name, CPU flags that run it)
PATHS = [
    ("portable", "portable", []),
    ("avx2", "AVX2", ["avx2", "fma"]),
    ("avx512", "AVX-512", ["avx512f"]),
    ("avx512-bf16-vnni", "AVX-512 BF16/VNNI", ["avx512_bf16", "avx512_vnni"]),
    ("amx", "AMX", ["amx_tile"]),
]
LINE = re.compile(r"^isa-paths: ran=(\S*) not-run=(\S*)\s*$", re.M)


def cpu_flags(cpuinfo):
    """This CPU's flags from cpuinfo (/proc/cpuinfo's form), or None where that cannot be
    read."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def names(tests, most=3):
    t = sorted(tests)
    more = f", +{len(t) - most}" if len(t) > most else ""
    return ", ".join(t[:most]) + more


def paths_lines(ran, not_run, cpuinfo):
    # /proc/cpuinfo under an emulator is the host's: off x86 no x86 path can run (a
    # cpuinfo file given with --cpuinfo is taken as it is)
    machine = platform.machine()
    x86 = machine in ("x86_64", "AMD64", "i386", "i686") or cpuinfo != "/proc/cpuinfo"
    flags = cpu_flags(cpuinfo) if x86 else set()
    lines = []
    for key, name, need in PATHS:
        if ran.get(key):
            n = len(ran[key])
            lines.append(f"  ran      {name:18} {n} test{'s' * (n != 1)}: {names(ran[key])}")
            continue
        if flags is None:
            why = ["this CPU's flags unknown"]
        elif not need:
            why = []
        elif not x86:
            why = [f"an {machine} CPU, not x86"]
        elif all(f in flags for f in need):
            why = [f"the CPU has it ({' '.join(need)})"]
        else:
            why = [f"the CPU lacks {' '.join(f for f in need if f not in flags)}"]
        if not_run.get(key):
            why.append(f"skipped by {names(not_run[key])}")
        else:
            why.append("no test runs code for it")
        lines.append(f"  not run  {name:18} {'; '.join(why)}")
    return lines


def main(args):
    cpuinfo = "/proc/cpuinfo"
    if args[:1] == ["--cpuinfo"] and len(args) >= 2:
        cpuinfo, args = args[1], args[2:]
    dirs = args
    passed = skipped = failed = 0
    ran, not_run = {}, {}
    for d in dirs:
        path = f"{d}/meson-logs/testlog.json" if os.path.isdir(d) else d
        try:
            f = open(path)
        except OSError as e:
            print(f"FAILED: {d}: no test log ({e.strerror})")
            failed += 1
            continue
        with f:
            for line in f:
                r = json.loads(line)
                if r["result"] in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif r["result"] == "SKIP":
                    skipped += 1
                else:
                    failed += 1
                    print(f"FAILED: {d}: {r['name']} ({r['result']})")
                test = r["name"].split(" / ")[-1]   # without "project:suite / "
                for m in LINE.finditer(r.get("stdout") or ""):
                    for key in filter(None, m.group(2).split(",")):
                        not_run.setdefault(key, set()).add(test)
                    if r["result"] != "SKIP":
                        for key in filter(None, m.group(1).split(",")):
                            ran.setdefault(key, set()).add(test)
    print("CPU paths of our kernels, as the tests report them:")
    for line in paths_lines(ran, not_run, cpuinfo):
        print(line)
    print(f"{passed} passed, {skipped} skipped, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
