#!/usr/bin/env python3
"""test_pkgconfig.py MESON BUILD_ROOT FIXTURES: the installed development files link a C
program.  Installs the `devel` tag (gpunet.h, libgpunet-engine.a, gpunet.pc) into a
temporary DESTDIR, builds a program with `pkg-config --cflags --libs gpunet` as a user
would, and runs it: it loads the tiny-a fixture and classifies on the cpu-ref and cpu
backends, so the kernels' objects must be inside the installed archive.  Then the
installed example-app.c builds with `pkg-config --cflags --libs gst-gpunet`."""
import os
import shutil
import subprocess
import sys
import tempfile

PROGRAM = r'''
#include <stdio.h>
#include <stdlib.h>
#include <gpunet.h>

int
main (int argc, char **argv)
{
  gpunet_model *m = NULL;
  char *err = NULL;
  if (gpunet_model_load (argv[1], argv[2], &m, &err) != GPUNET_OK) {
    fprintf (stderr, "load: %s\n", err);
    return 1;
  }
  const gpunet_backend_kind kinds[2] = { GPUNET_BACKEND_CPU_REF, GPUNET_BACKEND_CPU };
  for (int i = 0; i < 2; i++) {
    gpunet_session_params p;
    gpunet_session_params_init (&p);
    p.backend = kinds[i];
    gpunet_session *s = NULL;
    if (gpunet_session_new (m, &p, &s, &err) != GPUNET_OK) {
      fprintf (stderr, "session: %s\n", err);
      return 1;
    }
    printf ("%s=%s\n", gpunet_backend_kind_name (kinds[i]), gpunet_session_backend_name (s));
    gpunet_session_free (s);
  }
  gpunet_model_unref (m);
  return 0;
}
'''


def main():
    meson, build, fixtures = sys.argv[1], sys.argv[2], sys.argv[3]
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not shutil.which("pkg-config"):
        print("SKIP: no C compiler or pkg-config")
        return 77
    with tempfile.TemporaryDirectory() as dest:
        p = subprocess.run([meson, "install", "-C", build, "--no-rebuild", "--tags", "devel",
                            "--destdir", dest, "--quiet"], capture_output=True, text=True)
        if p.returncode != 0:
            print("FAIL meson install --tags devel:", p.stdout[-2000:], p.stderr[-2000:])
            return 1
        pcs = [os.path.join(d, "gpunet.pc") for d, _, names in os.walk(dest)
               if "gpunet.pc" in names]
        if len(pcs) != 1:
            print(f"FAIL: expected one installed gpunet.pc, found {pcs}")
            return 1
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]),
                   PKG_CONFIG_SYSROOT_DIR=dest)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "gpunet"], env=env,
                               capture_output=True, text=True)
        if flags.returncode != 0:
            print("FAIL pkg-config gpunet:", flags.stderr)
            return 1
        src, exe = os.path.join(dest, "t.c"), os.path.join(dest, "t")
        with open(src, "w") as f:
            f.write(PROGRAM)
        p = subprocess.run([cc, src, "-o", exe] + flags.stdout.split(), capture_output=True,
                           text=True)
        if p.returncode != 0:
            print("FAIL: a C program does not build with pkg-config gpunet (%s):\n%s" % (
                flags.stdout.strip(), p.stderr[-3000:]))
            return 1
        run = subprocess.run([exe, os.path.join(fixtures, "tiny-a.json"),
                              os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar")],
                             capture_output=True, text=True)
        print(run.stdout.strip(), run.stderr.strip())
        lines = run.stdout.split()
        ok = run.returncode == 0 and "cpu-ref=cpu-ref" in lines and any(
            l.startswith("cpu=cpu") for l in lines)
        # the installed example program builds with the documented compile line
        passed = int(ok)
        examples = [os.path.join(d, "example-app.c") for d, _, names in os.walk(dest)
                    if "example-app.c" in names and "read_meta.py" in names]
        # (the sysroot would prefix GStreamer's own flags too: those come from the system)
        gst = subprocess.run(["pkg-config", "--cflags-only-I", "gst-gpunet"], env=env,
                             capture_output=True, text=True)
        sysgst = subprocess.run(["pkg-config", "--cflags", "--libs", "gstreamer-1.0"],
                                capture_output=True, text=True)
        own = [f for f in gst.stdout.split() if f.startswith("-I" + dest)]
        built = False
        if len(examples) == 1 and gst.returncode == 0 and own:
            p = subprocess.run([cc, examples[0], "-o", os.path.join(dest, "ex")] + own
                               + sysgst.stdout.split(), capture_output=True, text=True)
            built = p.returncode == 0
            if not built:
                print("FAIL: example-app.c with pkg-config gst-gpunet:", p.stderr[-2000:])
        else:
            print(f"FAIL: installed examples {examples}, pkg-config gst-gpunet: {gst.stderr}")
        passed += int(built)
        print(f"{passed} passed, {2 - passed} failed")
        return 0 if passed == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
