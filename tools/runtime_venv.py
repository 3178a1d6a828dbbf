"""runtime_venv.py: the Python virtual environment holding the CPU runtimes we compare with
(ONNX Runtime, OpenVINO) from PyPI, made once in a cache directory and reused.

    python = ensure_venv(["onnxruntime", "numpy"])   # path of the venv's python3

The directory is $GPUNET_CACHE_DIR, else $XDG_CACHE_HOME/gst-gpunet, else
~/.cache/gst-gpunet; one venv per package set.  Raises Unreachable when PyPI cannot be
reached (tests then skip), RuntimeError when pip fails otherwise."""
import hashlib
import os
import subprocess
import sys
import urllib.request


class Unreachable(RuntimeError):
    pass


def cache_dir():
    base = os.environ.get("GPUNET_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "gst-gpunet")
    return base


def venv_dir(packages):
    tag = hashlib.sha1(" ".join(sorted(packages)).encode()).hexdigest()[:10]
    return os.path.join(cache_dir(), "venv-" + tag)


def pypi_reachable(timeout=10):
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/")
    try:
        urllib.request.urlopen(index + "/pip/", timeout=timeout).close()
        return True
    except Exception:
        return False


def ensure_venv(packages, log=sys.stderr):
    """The venv's python3 with `packages` installed (made on first use)."""
    d = venv_dir(packages)
    py = os.path.join(d, "bin", "python3")
    stamp = os.path.join(d, "gpunet-ready")
    if os.path.exists(stamp):
        return py
    if not pypi_reachable():
        raise Unreachable("PyPI cannot be reached (needed once to install %s into %s)"
                          % (", ".join(packages), d))
    print("making %s with %s (once)" % (d, ", ".join(packages)), file=log)
    os.makedirs(cache_dir(), exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", d], check=True)
    p = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
                       + list(packages), capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("pip install %s failed: %s" % (" ".join(packages),
                                                           p.stderr.strip()[-2000:]))
    open(stamp, "w").close()
    return py
