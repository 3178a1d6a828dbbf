#!/usr/bin/env python3
"""test_install_dir.py MESON SOURCE_ROOT: where `meson install` puts the plugin
(issue 31, point 7). With GStreamer's prefix it goes into gstreamer-1.0's pkg-config
pluginsdir (where gst-inspect-1.0 looks); with another prefix into
PREFIX/libdir/gstreamer-1.0, and configure prints a message naming GST_PLUGIN_PATH.
Configures two small build trees (no CUDA, no tests), builds nothing."""
import json
import os
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def plugin_dest(meson, src, build, prefix):
    p = subprocess.run([meson, "setup", build, src, f"-Dprefix={prefix}", "-Dcuda=disabled",
                        "-Dtests=false", "-Dcpu_fast=disabled"], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])
        return None, ""
    inst = json.loads(subprocess.run([meson, "introspect", build, "--installed"],
                                     capture_output=True, text=True, check=True).stdout)
    dest = [v for k, v in inst.items() if os.path.basename(k).startswith("libgstgpunet")]
    return (dest[0] if dest else None), p.stdout


def main():
    meson, src = sys.argv[1], os.path.abspath(sys.argv[2])
    pc = subprocess.run(["pkg-config", "--variable=pluginsdir", "gstreamer-1.0"],
                        capture_output=True, text=True)
    gst_prefix = subprocess.run(["pkg-config", "--variable=prefix", "gstreamer-1.0"],
                                capture_output=True, text=True).stdout.strip()
    if pc.returncode != 0 or not pc.stdout.strip():
        print("SKIP: no gstreamer-1.0 pkg-config file")
        return 77
    pluginsdir = pc.stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        dest, out = plugin_dest(meson, src, os.path.join(tmp, "a"), gst_prefix)
        check(dest == os.path.join(pluginsdir, "libgstgpunet.so"),
              f"prefix {gst_prefix}: the plugin goes to {dest}, GStreamer looks in {pluginsdir}")
        check("does not scan" not in out, "no warning when GStreamer will find it")
        other = os.path.join(tmp, "prefix")
        dest, out = plugin_dest(meson, src, os.path.join(tmp, "b"), other)
        check(dest is not None and dest.startswith(other + "/")
              and dest.endswith("/gstreamer-1.0/libgstgpunet.so"),
              f"prefix {other}: the plugin goes to {dest}")
        check("does not scan" in out and "GST_PLUGIN_PATH=" in out and "-Dprefix=" in out,
              "configure says GStreamer will not find it, and what to set")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
