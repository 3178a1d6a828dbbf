"""gpunet-cameras against real servers on loopback (the fast share of suite
`cameras`): a gst-rtsp-server serving a clean and a lossy (netsim, 5 % of RTP
packets dropped) stream, a mosquitto broker read by mosquitto_sub, and the
service's /metrics.  Checks: a malformed config names file, line and key and the
service refuses to start, and so do command-line numbers outside the file keys'
ranges; cameras come up; a missing file, a file that is no video, a roi outside
the frame and a server that never answers end `down` with a reason while the
others run; json-output a FIFO: refused without a reader, an error event when
the reader goes; the lossy stream's damage is counted; a file camera's counters on /metrics agree with
its JSON lines (interval=2: classified and carried); the broker killed and
restarted: publishing resumes; SIGHUP adds one camera, removes one and leaves the
others untouched; a bad config on SIGHUP keeps the old one; a full disk (/dev/full)
is an error event and a counted loss; SIGTERM flushes every output and exits 0.

    test_cameras.py TOOL DATA_DIR"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from camlib import (Broker, Rtsp, Sub, free_port, has, make_clip, need_rtsp,  # noqa
                    read_jsonl, scrape, states, stop, wait_for)

tool, data = sys.argv[1], sys.argv[2]
failed = 0


def check(cond, what):
    global failed
    if not cond:
        failed += 1
        print("FAIL:", what, flush=True)
    return cond


need_rtsp()
for prog in ("mosquitto", "mosquitto_sub"):
    if subprocess.run(["sh", "-c", f"command -v {prog}"],
                      capture_output=True).returncode:
        print(f"SKIP: {prog} is not installed (scripts/install-deps.sh)")
        sys.exit(77)

fx = f"{data}/fixtures"
env = dict(os.environ)
env.pop("GST_PLUGIN_PATH", None)
env.pop("GST_PLUGIN_PATH_1_0", None)
tmp = tempfile.mkdtemp(prefix="gpunet-cameras-")


def service_conf(cams, extra=""):
    s = (f"[service]\nmodel={fx}/tiny-a.json\ncheckpoint={fx}/tiny-a/tiny-a.pth.tar\n"
         "n-threads=1\nstall-timeout=4\nreconnect-min=0.3\nreconnect-max=1\n"
         "max-retries=3\n" + extra)
    for name, kv in cams:
        s += f"\n[{name}]\n" + "".join(f"{k}={v}\n" for k, v in kv.items())
    return s


# 1. a malformed config: file, line and key named, refused
bad = os.path.join(tmp, "bad.conf")
with open(bad, "w") as f:
    f.write(service_conf([("a", {"uri": "rtsp://127.0.0.1:1/x", "interval": "two"})]))
line = open(bad).read().splitlines().index("interval=two") + 1
r = subprocess.run([tool, "--config", bad], capture_output=True, text=True, env=env)
check(r.returncode == 2 and f"{bad}:{line}: key 'interval'" in r.stderr
      and "not starting" in r.stderr, f"bad config: {r.returncode} {r.stderr!r}")
with open(bad, "w") as f:
    f.write("[service]\ncheckpoint=x\nthis line is junk\n")
r = subprocess.run([tool, "--config", bad], capture_output=True, text=True, env=env)
check(r.returncode == 2 and f"{bad}:3:" in r.stderr, f"junk line: {r.stderr!r}")
# the command line's numbers get the file's ranges: a negative one was ignored
# (the default ran), a large one reached the element (a GLib warning, its default)
good = os.path.join(tmp, "good.conf")
with open(good, "w") as f:
    f.write(service_conf([("a", {"uri": "rtsp://127.0.0.1:1/x"})]))
for opt, said in ((["--n-threads", "99999"], "--n-threads 99999 is out of range"),
                  (["--n-threads", "-4"], "--n-threads -4 is out of range"),
                  (["--stall-timeout", "nan"], "--stall-timeout nan is out of range"),
                  (["--mqtt-port", "99999"], "from 1 to 65535")):
    r = subprocess.run([tool, "--config", good, "--check-config"] + opt,
                       capture_output=True, text=True, env=env)
    check(r.returncode == 2 and said in r.stderr and "not starting" in r.stderr,
          f"{opt}: {r.returncode} {r.stderr!r}")
r = subprocess.run([tool, "--config", good, "--check-config", "--n-threads", "2"],
                   capture_output=True, text=True, env=env)
check(r.returncode == 0, f"--n-threads 2: {r.returncode} {r.stderr!r}")

# 2. the service with every output
# 320x240: several RTP packets a frame, so 5 % drops hit within seconds
rtsp = Rtsp(size="320x240").start()
broker = Broker(tmp).start()
sub_out = os.path.join(tmp, "mqtt.txt")
sub = Sub(broker.port, "cams/#", sub_out)
clip = os.path.join(tmp, "clip.mp4")
make_clip(clip, 20)
# a codec this host has no decoder for: High 4:4:4 (x264enc) without
# gstreamer1.0-libav; otherwise a text file stands for it (no decoder either)
no_444 = has("x264enc") and not has("avdec_h264")
hi444 = os.path.join(tmp, "hi444.mp4")
if no_444:
    make_clip(hi444, 5, "Y444", "x264enc")
else:
    with open(hi444, "w") as f:
        f.write("not a video either\n" * 50)
notvideo = os.path.join(tmp, "notes.txt")
with open(notvideo, "w") as f:
    f.write("this is not a video\n" * 50)
# json-output a FIFO: without a reader the service refuses to start (it used to wait
# in open() for good); a reader that goes away is a failed write, an error event and
# exit 0 at SIGTERM (SIGPIPE used to end the service)
fifo = os.path.join(tmp, "records.fifo")
os.mkfifo(fifo)
try:
    r = subprocess.run([tool, "--config", good, "--json-output", fifo],
                       capture_output=True, text=True, env=env, timeout=20)
    check(r.returncode != 0 and "a FIFO that no process reads" in r.stderr,
          f"FIFO without a reader: {r.returncode} {r.stderr!r}")
except subprocess.TimeoutExpired:
    check(False, "FIFO without a reader: the service hung in open()")
rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
fp = subprocess.Popen([tool, "--config", good, "--json-output", fifo, "--camera",
                       "f=file://" + clip], stdout=subprocess.DEVNULL,
                      stderr=subprocess.PIPE, text=True, env=env)
got = b""
t_end = time.time() + 20
while b"end of the file" not in got and time.time() < t_end:
    try:
        got += os.read(rfd, 65536)
    except BlockingIOError:
        time.sleep(0.1)
os.close(rfd)
fp.send_signal(signal.SIGTERM)
try:
    _, ferr = fp.communicate(timeout=20)
except subprocess.TimeoutExpired:
    fp.kill()
    _, ferr = fp.communicate()
check(b"end of the file" in got and fp.returncode == 0
      and '"output":"json"' in ferr and "Broken pipe" in ferr,
      f"FIFO reader gone: exit {fp.returncode}, {ferr[-300:]!r}")
os.unlink(fifo)

jdir = os.path.join(tmp, "json")
mport = free_port()
conf = os.path.join(tmp, "cameras.conf")
cams = [("a", {"uri": rtsp.url("cam")}),
        ("lossy", {"uri": rtsp.url("lossy")}),
        ("clip", {"uri": "file://" + clip, "interval": "2"}),
        ("missing", {"uri": "file://" + os.path.join(tmp, "nothere.mp4")}),
        ("notvideo", {"uri": "file://" + notvideo}),
        ("nobody", {"uri": f"rtsp://127.0.0.1:{free_port()}/x"}),
        ("hi444", {"uri": "file://" + hi444}),
        # a region set for a bigger picture than the clip's 96x72
        ("offroi", {"uri": "file://" + clip, "roi": "200,100,40,40"})]
extra = (f"json-dir={jdir}\njson-output=/dev/full\nmqtt-host=127.0.0.1\n"
         f"mqtt-port={broker.port}\nmqtt-prefix=cams\nmqtt-qos=1\nmqtt-queue=10\n"
         f"metrics-port={mport}\n")
with open(conf, "w") as f:
    f.write(service_conf(cams, extra))
log = open(os.path.join(tmp, "service.log"), "w")
p = subprocess.Popen([tool, "--config", conf], stdout=log, stderr=subprocess.STDOUT,
                     env=env)
J = lambda cam: read_jsonl(os.path.join(jdir, cam + ".jsonl"))  # noqa: E731
try:
    up = wait_for(lambda: all("up" in states(J(c)) for c in ("a", "lossy")), 15)
    check(up, f"a and lossy up: {states(J('a'))} {states(J('lossy'))}")
    check(wait_for(lambda: all(states(J(c))[-1:] == ["down"] for c in
                               ("clip", "missing", "notvideo", "nobody")), 15),
          "clip, missing, notvideo and nobody end down: " +
          str([(c, states(J(c))) for c in ("clip", "missing", "notvideo", "nobody")]))
    reasons = {c: [r["reason"] for r in J(c) if r.get("state") == "down"]
               for c in ("clip", "missing", "notvideo", "nobody")}
    check("end of the file" in str(reasons["clip"]), f"clip: {reasons}")
    check("not found" in str(reasons["missing"]).lower(), f"missing: {reasons}")
    check(reasons["notvideo"] and reasons["notvideo"][0], f"notvideo: {reasons}")
    check("gave up" in str(reasons["nobody"]), f"nobody: {reasons}")
    # a roi wholly outside the frame: down at its first frame, with the frame's size
    # (it used to stay up and write no record, without a word)
    check(wait_for(lambda: states(J("offroi"))[-1:] == ["down"], 15),
          f"offroi ends down: {states(J('offroi'))}")
    roff = [r["reason"] for r in J("offroi") if r.get("state") == "down"]
    check("outside the camera's 96x72 frame" in str(roff)
          and not any(r["event"] == "class" for r in J("offroi")), f"offroi: {roff}")
    r444 = [r["reason"] for r in J("hi444") if r.get("state") == "down"]
    check(r444 and r444[0], f"hi444: down with a reason: {r444}")
    if no_444:
        check("unsupported codec" in str(r444), f"hi444: {r444}")
    else:
        print("note: no x264enc, or avdec_h264 decodes High 4:4:4 here: the "
              "no-decoder reason is not checked")

    # the file camera is finished: its counters are final and match its lines
    m = scrape(mport)
    recs = [r for r in J("clip") if r["event"] == "class"]
    inf = sum(1 for r in recs if r["inferred"])
    check(len(recs) == 20 and inf == 7, f"clip: {len(recs)} records, {inf} inferred")
    check(m.get('gpunet_camera_classified_total{camera="clip"}') == inf
          and m.get('gpunet_camera_carried_total{camera="clip"}') == len(recs) - inf
          and m.get('gpunet_camera_frames_total{camera="clip"}') == len(recs)
          and m.get('gpunet_camera_latency_ms_count{camera="clip"}') == len(recs),
          "clip's metrics agree with its JSON lines: " +
          str({k: v for k, v in m.items() if 'camera="clip"' in k and "bucket" not in k}))
    check(m.get('gpunet_camera_state{camera="a",state="up"}') == 1, "a up on /metrics")
    check(m.get('gpunet_camera_state{camera="nobody",state="down"}') == 1,
          "nobody down on /metrics")
    check(m.get("gpunet_json_lost_total", 0) > 0, "/dev/full: lines counted lost")
    check(m.get("gpunet_process_resident_bytes", 0) > 1e6, "rss")
    if 'gpunet_camera_latency_p99_ms{camera="a"}' in m:  # the element has stats
        check(m['gpunet_camera_latency_p99_ms{camera="a"}'] > 0
              and m.get("gpunet_engine_batch_occupancy", 0) > 0
              and m.get("gpunet_engine_pass_ms", 0) > 0,
              "element stats reach /metrics")

    # the broker goes away and comes back: publishing resumes
    n_before = len([l for l in sub.lines() if l.startswith("cams/a/class")])
    check(n_before > 0, "MQTT class messages before the broker restart")
    sub.stop()
    broker.kill()
    time.sleep(2)
    m = scrape(mport)
    check(m.get("gpunet_mqtt_connected") == 0 and m.get("gpunet_mqtt_queued") == 10
          and m.get("gpunet_mqtt_dropped_total", 0) > 0,
          "broker away: queue bounded at 10, drops counted: " +
          str({k: v for k, v in m.items() if "mqtt" in k}))
    broker.start()
    sub2 = Sub(broker.port, "cams/#", os.path.join(tmp, "mqtt2.txt"))
    check(wait_for(lambda: any(l.startswith("cams/a/class") for l in sub2.lines()),
                   12), "MQTT publishing resumed after the broker restart")
    check(wait_for(lambda: scrape(mport).get(
        'gpunet_camera_damaged_total{camera="lossy"}', 0) > 0, 5),
          "lossy: damage counted")
    m = scrape(mport)
    check(m.get("gpunet_mqtt_connected") == 1, "mqtt connected again")

    # SIGHUP: a bad config keeps the old one; then add c, remove lossy
    with open(conf, "w") as f:
        f.write(service_conf(cams, extra) + "\n[c]\nuri=ftp://nope\n")
    p.send_signal(signal.SIGHUP)
    time.sleep(1)
    check(p.poll() is None and "up" in states(J("lossy"))
          and states(J("lossy"))[-1] == "up", "bad reload kept the old cameras")
    a_states = len(states(J("a")))
    cams2 = [c for c in cams if c[0] != "lossy"] + [("c", {"uri": rtsp.url("cam")})]
    with open(conf, "w") as f:
        f.write(service_conf(cams2, extra))
    p.send_signal(signal.SIGHUP)
    check(wait_for(lambda: "up" in states(J("c")), 12), f"c added: {states(J('c'))}")
    check(states(J("lossy"))[-1] == "stopped", f"lossy removed: {states(J('lossy'))}")
    check(len(states(J("a"))) == a_states, f"a untouched: {states(J('a'))}")
    m = scrape(mport)
    check(not any('camera="lossy"' in k for k in m), "lossy gone from /metrics")
    check(m.get('gpunet_camera_frames_total{camera="c"}', 0) > 0, "c counted")
    lossy = [r for r in J("lossy") if r["event"] == "class"]
    check(len(lossy) > 10, f"lossy classified frames: {len(lossy)}")
finally:
    rc = stop(p)
    log.close()
    broker_ok = broker.p.poll() is None
with open(os.path.join(tmp, "service.log")) as f:
    text = f.read()
check(rc == 0, f"SIGTERM: exit {rc}\n{text[-2000:]}")
check(text.count('"output":"json","file":"/dev/full","error":"No space left on device"')
      == 1, "the full disk is one error event (per run of failures)")
for c in ("a", "c", "clip"):
    check(states(J(c))[-1:] == ["stopped"], f"{c}: last line is its stop: "
          f"{states(J(c))[-2:]}")
# the final state messages reached the broker before the exit
time.sleep(0.3)
check(broker_ok and any(l.startswith("cams/a/state") and '"stopped"' in l
                        for l in sub2.lines()), "MQTT flushed at SIGTERM")
m_lossy = None
text_l = [l for l in text.splitlines() if "damage" in l]
sub2.stop()
broker.kill()
rtsp.kill()
if not failed:
    shutil.rmtree(tmp, ignore_errors=True)
else:
    print("kept for inspection:", tmp)
print(f"{'FAILED' if failed else 'passed'}: {failed} failures")
sys.exit(1 if failed else 0)
