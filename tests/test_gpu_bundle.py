#!/usr/bin/env python3
"""test_gpu_bundle.py: scripts/gpu-bundle.sh packs a bundle from this build, and its
run.sh runs it in an environment with nothing of ours set.  Checked:
- a build directory without the tools is refused with exit 2;
- it holds every program gpu-check.sh names ($TOOLS/NAME: the tools, the op harness)
  and no other (gpunet-cameras stays out);
- the bundle is closed: every library an ELF file of the bundle needs (DT_NEEDED, read
  with readelf, so the host's own libraries cannot hide a gap) is in the bundle, or is one
  the GPU host must bring itself (C library, driver, CUDA toolkit, cuDNN, NPP);
- under run.sh, gst-inspect-1.0 is the bundle's, and GStreamer's libraries and the
  pipelines' plug-ins (videotestsrc, h264parse, qtdemux, mp4mux, fakesink, an H.264
  encoder) load from the unpacked bundle only (GST_PLUGIN_SYSTEM_PATH);
- gpunetclassify loads from the unpacked build, and gpunet-bench runs there on the CPU
  with the kernel module run.sh names;
- run.sh replaces the argument BUNDLE/build with the unpacked build;
- the default bundle, which leaves oneDNN out, still holds every library of the programs
  gpu-check runs (the op harness links oneDNN).
Usage: test_gpu_bundle.py SOURCE_ROOT BUILD_DIR"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

root, build = sys.argv[1], os.path.abspath(sys.argv[2])
script = os.path.join(root, "scripts", "gpu-bundle.sh")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


for tool in ("readelf", "xz", "gst-inspect-1.0", "pkg-config"):
    if shutil.which(tool) is None:
        print(f"SKIP: {tool} not found")
        sys.exit(77)
if not os.access(os.path.join(build, "tools", "gpunet-bench"), os.X_OK):
    print("SKIP: this build has no gpunet-bench")
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="gpu-bundle-test-")
bundle = os.path.join(tmp, "gpu-bundle")
unpacked = os.path.join(tmp, "unpacked")
env = dict(os.environ, NPP="skip", XZ_OPT="-0 -T0")

r = subprocess.run(["bash", script, os.path.join(tmp, "nowhere"), bundle], env=env,
                   capture_output=True, text=True)
check(r.returncode == 2 and "build first" in r.stderr,
      f"a build directory without tools: exit 2 and a sentence ({r.returncode}: {r.stderr!r})")

r = subprocess.run(["bash", script, build, bundle], env=env, capture_output=True, text=True)
check(r.returncode == 0, f"the bundle is made (exit {r.returncode}: {r.stdout} {r.stderr})")
if r.returncode != 0:
    print(f"{passed} passed, {failed} failed")
    sys.exit(1)
for f in ("build.tar.xz", "runtime.tar.xz", "run.sh"):
    check(os.path.isfile(os.path.join(bundle, f)), f"the bundle holds {f}")

# unpack as run.sh does, with a clean environment
clean = {"PATH": "/usr/bin:/bin", "HOME": tmp, "GPU_BUNDLE_TMP": unpacked}
r = subprocess.run([os.path.join(bundle, "run.sh"), "true"], env=clean, capture_output=True,
                   text=True)
check(r.returncode == 0, f"run.sh unpacks and runs a command ({r.returncode}: {r.stderr})")

# closure: DT_NEEDED of every ELF file in the bundle
host_brings = re.compile(r"^(ld-linux.*|lib(c|m|dl|pthread|rt|resolv|util)\.so.*|libcuda\.so.*|"
                         r"libnvidia-.*|libnvcuvid.*|libcudart.*|libcudnn.*|libcublas.*|"
                         r"libnvrtc.*|libnvJitLink.*|libcufft.*|libcurand.*|libnpp.*)$")
elves, provided = [], set()
for d, _, files in os.walk(unpacked):
    for f in files:
        p = os.path.join(d, f)
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        with open(p, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                continue
        elves.append(p)
        provided.add(f)
gaps = []
for p in elves:
    out = subprocess.run(["readelf", "-d", p], capture_output=True, text=True).stdout
    for need in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out):
        if need not in provided and not host_brings.match(need):
            gaps.append(f"{os.path.relpath(p, unpacked)} needs {need}")
# every program gpu-check.sh runs ($TOOLS/NAME, $TOOLS/../tests/NAME) that this build has
with open(os.path.join(root, "scripts", "gpu-check.sh")) as fh:
    named = set(re.findall(r"\$TOOLS/((?:\.\./tests/)?[A-Za-z0-9_-]+)", fh.read()))
wanted = {os.path.normpath(os.path.join("tools", n)) for n in named}
wanted = {w for w in wanted if os.path.isfile(os.path.join(build, w))}
check("tests/test_backend_ops" in wanted and "tools/gpunet-bench" in wanted,
      f"gpu-check.sh names the op harness and gpunet-bench ({sorted(wanted)})")
for w in sorted(wanted):
    check(os.path.isfile(os.path.join(unpacked, "build", w)), f"the bundle holds {w}")
check(not os.path.exists(os.path.join(unpacked, "build", "tools", "gpunet-cameras")),
      "the bundle leaves out programs gpu-check does not run (gpunet-cameras)")
check(len(elves) > 20, f"the bundle holds the build's and GStreamer's ELF files ({len(elves)})")
check(not gaps, "every library the bundle's programs need is in it: missing "
      + "; ".join(gaps[:8]))

# GStreamer and the plug-ins from the bundle alone
encoders = [e for e in ("x264enc", "openh264enc")
            if subprocess.run(["gst-inspect-1.0", "--exists", e]).returncode == 0]
probe = ("command -v gst-inspect-1.0; "
         "for e in videotestsrc h264parse qtdemux mp4mux fakesink " + " ".join(encoders) + "; do "
         "f=$(gst-inspect-1.0 $e | sed -n 's/^ *Filename *//p'); "
         "case $f in $GPU_BUNDLE_TMP/*) echo have=$e ;; *) echo other=$e:$f ;; esac; done; "
         "ldd \"$(command -v gst-inspect-1.0)\" | grep libgstreamer; "
         "f=$(GST_PLUGIN_PATH_1_0=$GPU_BUNDLE_TMP/build/gst gst-inspect-1.0 gpunetclassify "
         "| sed -n 's/^ *Filename *//p'); "
         "case $f in $GPU_BUNDLE_TMP/build/*) echo have=gpunetclassify ;; esac; "
         "echo cpu_module=$GPUNET_CPU_MODULE")
r = subprocess.run([os.path.join(bundle, "run.sh"), "sh", "-c", probe], env=clean,
                   capture_output=True, text=True)
lines = r.stdout.splitlines()
check(lines and lines[0].startswith(unpacked + "/"),
      f"gst-inspect-1.0 is the bundle's ({lines[:1]})")
have = {l[5:] for l in lines if l.startswith("have=")}
for e in ["videotestsrc", "h264parse", "qtdemux", "mp4mux", "fakesink", "gpunetclassify"] + encoders:
    check(e in have, f"{e} loads from the bundle alone ({r.stdout} {r.stderr})")
gstlib = [l for l in lines if "libgstreamer-1.0" in l]
check(gstlib and unpacked in gstlib[0], f"libgstreamer is the bundle's ({gstlib})")
check(f"cpu_module={unpacked}/build/" in r.stdout,
      f"run.sh names the unpacked CPU kernel module ({r.stdout})")

# the unpacked build runs, and BUNDLE/build names it
r = subprocess.run([os.path.join(bundle, "run.sh"), "sh", "-c",
                    '"$1/tools/gpunet-bench" --model gpunet-p0 --backend cpu --runs 1 '
                    '--warmup 0 --preprocess-runs 0', "sh", os.path.join(bundle, "build")],
                   env=clean, capture_output=True, text=True)
check(r.returncode == 0 and "median_ms=" in r.stdout,
      f"gpunet-bench runs from the unpacked build ({r.returncode}: {r.stdout[-300:]} {r.stderr[-300:]})")

shutil.rmtree(tmp, ignore_errors=True)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
