#!/usr/bin/env python3
"""check_cuda_deps.py BUILD_DIR SOURCE_ROOT: the CUDA module of a build is rebuilt when
any of its sources changes.  Asks ninja for every input of the module
(`ninja -t inputs`) and checks that each .cu file under kernels/cuda and each header a
unit may include (kernels/cuda/unity.py --headers) is among them: meson before 1.3
gives nvcc no dependency file, so a file missing here would leave the module stale
after an edit.  Exit 77 when the build has no CUDA module."""
import os
import subprocess
import sys

MODULE = "kernels/cuda/libgpunet-cuda.so"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build, root = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    targets = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"],
                             capture_output=True, text=True)
    if MODULE + ":" not in targets.stdout:
        print(f"SKIP: {build} builds no CUDA module")
        return 77
    out = subprocess.run(["ninja", "-C", build, "-t", "inputs", MODULE],
                         capture_output=True, text=True, check=True).stdout
    inputs = {os.path.normpath(os.path.join(build, line.strip()))
              for line in out.splitlines() if line.strip()}
    cuda = os.path.join(root, "kernels", "cuda")
    want = sorted(os.path.join(cuda, n) for n in os.listdir(cuda) if n.endswith(".cu"))
    want += subprocess.run([sys.executable, os.path.join(cuda, "unity.py"), "--headers", cuda],
                           capture_output=True, text=True, check=True).stdout.split()
    missing = [os.path.relpath(p, root) for p in want if os.path.normpath(p) not in inputs]
    print(f"{len(want)} sources and headers, {len(missing)} not inputs of {MODULE}")
    if missing:
        print("FAIL: an edit to these would not rebuild the CUDA module: " + ", ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
