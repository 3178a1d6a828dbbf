#!/usr/bin/env python3
"""The README's two commands (scripts/classify.sh, scripts/run-tests.sh) share the build
directory `build`: both must configure it with the same CUDA architectures, or each run
reconfigures it and rebuilds the other's CUDA objects.  Checked on the scripts' text: the
same GPU_ARCHS default, and every `meson setup` of that directory passes it."""
import re, sys

root = sys.argv[1]
passed = failed = 0

def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)

defaults = {}
for name in ("classify.sh", "run-tests.sh"):
    with open("%s/scripts/%s" % (root, name), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"GPU_ARCHS=\$\{GPU_ARCHS:-([0-9,]+)\}", text)
    check(m is not None, "%s sets GPU_ARCHS with a default" % name)
    defaults[name] = m.group(1) if m else None
    # every setup of the main build directory (not the sanitizer build's) names the archs
    for line in text.splitlines():
        if re.search(r"\bmeson setup\b", line) and "$BUILD\"" in line:
            check("gpu_archs" in line, "%s: '%s' names -Dgpu_archs" % (name, line.strip()))
    for line in text.splitlines():
        if re.search(r"^\s*setup \"\$BUILD\"", line):
            check("gpu_archs" in line, "%s: '%s' names -Dgpu_archs" % (name, line.strip()))
check(len(set(defaults.values())) == 1 and None not in defaults.values(),
      "both scripts default to the same GPU_ARCHS: %s" % defaults)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
