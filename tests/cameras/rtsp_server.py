"""A loopback RTSP server for the gpunet-cameras tests (gst-rtsp-server through
GI): serves /cam (a live videotestsrc, H.264) and /lossy (the same, through netsim
dropping --drop of the RTP packets) on 127.0.0.1:PORT.  Prints "ready PORT" once it
listens; stops on SIGTERM/SIGKILL.

    rtsp_server.py PORT [--drop 0.05] [--fps 10] [--size 96x72]"""
import argparse
import signal
import sys

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("--drop", type=float, default=0.05)
ap.add_argument("--fps", type=int, default=10)
ap.add_argument("--size", default="96x72")
a = ap.parse_args()
Gst.init(None)
server = GstRtspServer.RTSPServer()
server.set_address("127.0.0.1")
server.set_service(str(a.port))
w, h = a.size.split("x")
# openh264 (gstreamer1.0-plugins-bad) when present: Debian 12 decodes it with
# openh264dec; x264enc (plugins-ugly) otherwise, kept to 4:2:0 for the same reason
if Gst.ElementFactory.find("openh264enc"):
    enc = f"openh264enc gop-size={a.fps} complexity=low"
else:
    enc = f"x264enc tune=zerolatency speed-preset=ultrafast key-int-max={a.fps}"
src = (f"videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width={w},"
       f"height={h},framerate={a.fps}/1 ! {enc} ! rtph264pay config-interval=1 pt=96")
mounts = server.get_mount_points()
for path, tail in (("/cam", " name=pay0"),
                   ("/lossy", f" ! netsim drop-probability={a.drop} name=pay0")):
    f = GstRtspServer.RTSPMediaFactory()
    f.set_launch("( " + src + tail + " )")
    f.set_shared(True)
    mounts.add_factory(path, f)
if server.attach(None) == 0:
    print("cannot listen on", a.port, file=sys.stderr)
    sys.exit(1)
loop = GLib.MainLoop()
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
print("ready", a.port, flush=True)
loop.run()
