#!/usr/bin/env python3
"""check_pdl.py SOURCE_ROOT: every kernel the CUDA module launches through gpunet_launch
(kernels/cuda/cuda_internal.h) calls gpunet_pdl_wait () as the first statement of its
body.  With pdl=on such a kernel may start while the kernel before it in the stream is
still running; a read of that kernel's output, or a write over memory it still reads,
before the wait is a race that only a GPU would show, and only sometimes."""
import os
import re
import sys


def kernels_and_launches(src):
    """(name -> first statement of each __global__ body, names passed to gpunet_launch)"""
    bodies = {}
    src = re.sub(r"__launch_bounds__\s*\([^()]*\)", "", src)
    for m in re.finditer(r"__global__[^{;]*?\b(\w+)\s*\(([^{;]*?)\)\s*\{", src, re.S):
        rest = src[m.end():]
        first = rest.split(";", 1)[0].strip()
        bodies.setdefault(m.group(1), []).append(first)
    launched = set(re.findall(r"gpunet_launch\s*\(\s*(\w+)", src))
    return bodies, launched


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cuda = os.path.join(argv[1], "kernels", "cuda")
    bodies, launched = {}, set()
    for name in sorted(os.listdir(cuda)):
        if name.endswith(".cu"):
            b, l = kernels_and_launches(open(os.path.join(cuda, name)).read())
            for k, v in b.items():
                bodies.setdefault(k, []).extend(v)
            launched |= l
    bad = []
    for k in sorted(launched):
        if k not in bodies:
            bad.append(f"{k}: launched through gpunet_launch, no __global__ body found")
        elif any(first != "gpunet_pdl_wait ()" for first in bodies[k]):
            bad.append(f"{k}: its body starts with '{bodies[k][0][:60]}', not gpunet_pdl_wait ()")
    print(f"{len(launched)} kernels launched through gpunet_launch, {len(bad)} without the wait first")
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad or not launched else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
