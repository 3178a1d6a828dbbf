#!/usr/bin/env python3
"""test_install_deps.py SOURCE_ROOT: scripts/install-deps.sh decides what to install from one
dpkg-query over all its packages.  dpkg-query exits 1 when dpkg has never heard of one of
them (a fresh machine), and the script once took that for an error and stopped, silently,
before installing anything.  --missing lists what it would install, installing nothing."""
import os
import subprocess
import sys

script = os.path.join(sys.argv[1], "scripts", "install-deps.sh")
failed = 0


def check(cond, what):
    global failed
    if not cond:
        failed += 1
        print("FAILED:", what, file=sys.stderr)


def missing(*extra):
    p = subprocess.run(["bash", script, "--missing", *extra], capture_output=True, text=True)
    return p.returncode, p.stdout.split(), p.stderr


rc, out, err = missing()
check(rc == 0 and out == [], f"the suite's packages are all installed here: rc {rc}, {out} {err}")
rc, out, err = missing("gpunet-no-such-package", "bash")
check(rc == 0 and out == ["gpunet-no-such-package"],
      f"a package dpkg never heard of is listed, an installed one is not: rc {rc}, {out} {err}")
print("passed" if not failed else f"{failed} failed")
sys.exit(1 if failed else 0)
