#!/usr/bin/env python3
"""check_layers.py SOURCE_ROOT: the include rules of docs/architecture.md ("Layers").

- kernels/ includes nothing from models/, the public header gpunet.h included: the types
  both layers need are in kernels/gpunet-types.h, the bottom floor gpunet.h includes;
- gst/ includes nothing from models/ or kernels/ except gpunet.h;
- tools/ include gpunet.h; the tools named in TOOL_HEADERS may include, besides, the
  engine's narrow internal header models/gpunet-internal.h and the kernels/ headers
  listed for them (what each one's job needs, nothing funnelled); no tool includes
  another header of models/ or kernels/;
- the files of gst/, of models/ and of kernels/ include one another without a circle
  (issue 43: checkpoint.c and safetensors.c once did): a file and its header
  (gstgpunetqueue.c, gstgpunetqueue.h) count as one module, so a .c that includes
  another module's header while that module includes its own is reported too (the
  element's files call each other only down the include order).

An include names a header of a layer when it resolves (relative to the including file,
then the layer's include directories) to a file in that layer's directory.  The build's
include paths already stop a bare "error.h" in kernels/; this script also catches the
relative paths ("../../models/error.h") that no include path can stop.  Prints each
violation with the fix, then "N passed, N failed"; exit 1 when any failed.
"""
import os
import re
import sys

PUBLIC = "gpunet.h"
INTERNAL = "gpunet-internal.h"
# the tools whose job needs the engine's inside view (docs/architecture.md), each with
# the headers it may include besides gpunet.h: the narrow internal header, and only the
# kernels/ headers its own job needs
TOOL_HEADERS = {
    # per-backend and per-op timing: the backend table, the CPU and CUDA modules' bench
    # APIs (per-op profile, sgemm peak) and the ops' byte counts
    "gpunet-bench.c": {INTERNAL, "registry.h", "cpu_module.h", "cuda_module.h",
                       "cuda_cost.h"},
    # each CUDA op against the reference op, fp16 rounded as the module stores it
    "gpunet-selftest.c": {INTERNAL, "cuda_module.h", "cpu_ops.h", "half.h"},
    # checkpoint tensors to safetensors: engine only
    "gpunet-convert.c": {INTERNAL},
    # --onnx: the planned graph's ops and their activation codes
    "gpunet-onnx.c": {INTERNAL, "activation.h"},
}
INTERNAL_USERS = set(TOOL_HEADERS)
# known exceptions, each with the reason it is still there; a stale one is reported
EXCEPTIONS = {}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".c", ".h", ".cu")


def files_under(root, sub):
    for dirpath, _, names in os.walk(os.path.join(root, sub)):
        for n in sorted(names):
            if n.endswith(SOURCES):
                yield os.path.join(dirpath, n)


def resolve(root, including, name, search):
    """The real path of the header `name` included from `including`, or None."""
    for d in [os.path.dirname(including)] + [os.path.join(root, s) for s in search]:
        p = os.path.realpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def layer_of(root, path):
    rel = os.path.relpath(path, root)
    return rel.split(os.sep)[0] if path else None


def module_cycles(root, layer, search):
    """Circles among a layer's modules (a .c and its .h are one module, named by its
    path in the layer without the extension), as lists of names."""
    top = os.path.realpath(os.path.join(root, layer))
    graph = {}
    for f in files_under(root, layer):
        mod = os.path.splitext(os.path.relpath(os.path.realpath(f), top))[0]
        deps = graph.setdefault(mod, set())
        with open(f, encoding="utf-8", errors="replace") as fh:
            for name in INCLUDE.findall(fh.read()):
                target = resolve(root, f, name, search)
                if target and os.path.realpath(target).startswith(top + os.sep):
                    dep = os.path.splitext(os.path.relpath(os.path.realpath(target), top))[0]
                    if dep != mod:
                        deps.add(dep)
    cycles, state = [], {}

    def visit(mod, stack):
        state[mod] = 1
        stack.append(mod)
        for dep in sorted(graph.get(mod, ())):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[mod] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [])
    return graph, cycles


def main():
    if len(sys.argv) != 2 or not os.path.isdir(os.path.join(sys.argv[1], "kernels")):
        print("usage: check_layers.py SOURCE_ROOT (the directory holding kernels/, "
              "models/, tools/)")
        return 2
    root = os.path.realpath(sys.argv[1])
    kernels_search = ["kernels", "kernels/common", "kernels/host", "kernels/ref",
                      "kernels/cuda"]
    rules = [
        # (directory, search path, allowed engine headers for a file name -> set)
        ("kernels", kernels_search, lambda f: {PUBLIC}),
        ("gst", ["gst", "models"], lambda f: {PUBLIC}),
        ("tools", ["tools", "gst", "models"] + kernels_search,
         lambda f: {PUBLIC} | TOOL_HEADERS.get(os.path.basename(f), set())),
    ]
    passed, failed, seen = 0, 0, set()
    for layer, search, allowed in rules:
        for f in files_under(root, layer):
            rel_f = os.path.relpath(f, root)
            with open(f, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for name in INCLUDE.findall(text):
                target = resolve(root, f, name, search)
                if target is None and layer == "kernels":
                    # not in kernels/: an engine header by that name is still a leak
                    target = resolve(root, f, os.path.basename(name), ["models"])
                owner = layer_of(root, target) if target else None
                if layer == "kernels":
                    bad = owner == "models"
                else:
                    bad = owner in ("models", "kernels") and \
                        os.path.basename(target) not in allowed(f)
                if bad and (rel_f, os.path.basename(name)) in EXCEPTIONS:
                    seen.add((rel_f, os.path.basename(name)))
                    print("note: %s includes %s (known exception: %s)" % (
                        rel_f, name, EXCEPTIONS[(rel_f, os.path.basename(name))]))
                    bad = False
                if bad:
                    failed += 1
                    where = os.path.relpath(target, root)
                    if layer == "kernels":
                        fix = ("kernels/ include nothing from models/, not even gpunet.h: "
                               "use gpunet-types.h (the shared types) or move what it needs "
                               "into a kernels/ header (errors: kernel_error.h)")
                    elif layer == "gst":
                        fix = "the element uses the engine through gpunet.h only"
                    elif os.path.basename(f) in INTERNAL_USERS:
                        fix = ("include %s or the one kernels/ header that declares "
                               "it, and list that header for this tool in TOOL_HEADERS "
                               "with the reason" % INTERNAL)
                    else:
                        fix = ("tools use gpunet.h; only %s may include %s" % (
                            ", ".join(sorted(INTERNAL_USERS)), INTERNAL))
                    print("FAIL: %s includes %s (%s): %s" % (rel_f, name, where, fix))
                else:
                    passed += 1
    for layer, search in (("gst", ["gst"]), ("models", ["models"] + kernels_search),
                          ("kernels", kernels_search)):
        graph, cycles = module_cycles(root, layer, search)
        for cycle in cycles:
            failed += 1
            print("FAIL: %s/ include circle %s: the lower file must not include the "
                  "upper one (move the shared type down, or pass a callback)" % (
                      layer, " -> ".join(cycle)))
        passed += len(graph) - len(cycles)
    for stale in sorted(set(EXCEPTIONS) - seen):
        print("note: the exception for %s including %s is no longer needed: remove it "
              "from tests/check_layers.py" % stale)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
