"""Helpers of the gpunet-cameras tests: free loopback ports, the servers they start
and stop (RTSP, mosquitto, mosquitto_sub), the service itself, and reading its JSON
lines.  Every process started here is stopped by the test that started it."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_for(cond, timeout, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def need_rtsp():
    r = subprocess.run([PY, "-c", "import gi; gi.require_version('GstRtspServer', "
                        "'1.0'); from gi.repository import GstRtspServer"],
                       capture_output=True)
    if r.returncode != 0:
        skip("python3-gi with gir1.2-gst-rtsp-server-1.0 is not installed "
             "(scripts/install-deps.sh)")
    if not (has("openh264enc") or has("x264enc")):
        skip("no H.264 encoder (openh264enc in gstreamer1.0-plugins-bad, or x264enc)")


def has(element):
    return subprocess.run(["gst-inspect-1.0", "--exists", element]).returncode == 0


class Rtsp:
    def __init__(self, port=None, drop=0.05, fps=10, size="96x72"):
        self.port = port or free_port()
        self.drop = drop
        self.extra = ["--fps", str(fps), "--size", size]
        self.p = None

    def start(self):
        self.p = subprocess.Popen([PY, os.path.join(HERE, "rtsp_server.py"),
                                   str(self.port), "--drop", str(self.drop)] + self.extra,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        assert line.startswith("ready"), f"RTSP server: {line!r}"
        return self

    def kill(self):
        if self.p and self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def url(self, path):
        return f"rtsp://127.0.0.1:{self.port}/{path}"


class Broker:
    def __init__(self, tmp, port=None):
        self.port = port or free_port()
        self.conf = os.path.join(tmp, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                    "persistence false\n")
        self.p = None

    def start(self):
        self.p = subprocess.Popen(["mosquitto", "-c", self.conf],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ok = wait_for(lambda: _connects(self.port), 5)
        assert ok, "mosquitto did not start"
        return self

    def kill(self):
        if self.p and self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def _connects(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


class Sub:
    """mosquitto_sub -v on PREFIX/#, its lines collected in a file"""
    def __init__(self, port, topic, out):
        self.out = out
        self.f = open(out, "a")
        self.p = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p",
                                   str(port), "-t", topic, "-v", "-q", "1"],
                                  stdout=self.f, stderr=subprocess.DEVNULL)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            self.p.wait()
        self.f.close()

    def lines(self):
        with open(self.out) as f:
            return [l.rstrip("\n") for l in f if l.strip()]


def read_jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for l in f:
            if l.endswith("\n"):
                out.append(json.loads(l))
    return out


def states(records, cam=None):
    return [r["state"] for r in records if r["event"] == "state"
            and (cam is None or r["camera"] == cam)]


def make_clip(path, frames=20, fmt="I420", enc=None):
    """H.264 in MP4 (openh264enc, else x264enc); enc="x264enc" with fmt=Y444 gives
    High 4:4:4, which avdec_h264 decodes and Debian 12's openh264dec does not"""
    enc = enc or ("openh264enc" if has("openh264enc") else "x264enc")
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", f"num-buffers={frames}",
                    "!", f"video/x-raw,format={fmt},width=96,height=72,framerate=10/1", "!",
                    enc, "!", "h264parse", "!",
                    "mp4mux", "!", "filesink", f"location={path}"], check=True)


def scrape(port):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    m = {}
    for l in text.splitlines():
        if l.startswith("#") or not l.strip():
            continue
        k, v = l.rsplit(" ", 1)
        m[k] = float(v)
    return m


def stop(p, sig=signal.SIGTERM, timeout=20):
    if p.poll() is None:
        p.send_signal(sig)
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None
