#!/usr/bin/env python3
"""Latency of gpunet-cameras on live cameras whose engine is slower than they are:
when-busy=wait against when-busy=skip, in alternating rounds of the same run.

Starts a loopback RTSP server (tests/cameras/rtsp_server.py) with N live streams
at --fps, runs the service for --seconds per round, and prints per round and mode
the element's p50/p99 latency (its stats, last 1024 frames), frames in, classified,
skipped, the engine's mean pass time (`gpunet_engine_pass_ms`, the element's
pass-mean-ms) and wall time over classified frames; then min/median/max per mode.

    tools/cameras_when_busy.py BUILD_DIR CHECKPOINT [--model gpunet-0] [--streams 2]
        [--fps 15] [--seconds 20] [--rounds 2] [--n-threads 0]"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cameras"))
from camlib import Rtsp, free_port, scrape, stop, wait_for  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("checkpoint")
ap.add_argument("--model", default="gpunet-0")
ap.add_argument("--streams", type=int, default=2)
ap.add_argument("--fps", type=int, default=15)
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--n-threads", type=int, default=0)
a = ap.parse_args()
tool = os.path.join(a.build, "tools", "gpunet-cameras")
srv = Rtsp(drop=0, fps=a.fps, size="640x480").start()
res = {"wait": [], "skip": []}


def all_up(port, names):
    try:
        m = scrape(port)
    except OSError:
        return False
    return all(m.get(f'gpunet_camera_state{{camera="{n}",state="up"}}') == 1
               for n in names)


try:
    for rnd in range(a.rounds):
        for mode in ("wait", "skip"):
            port = free_port()
            cmd = [tool, "--model", a.model, "--checkpoint", a.checkpoint,
                   "--n-threads", str(a.n_threads), "--when-busy", mode,
                   "--metrics-port", str(port), "--stall-timeout", "60"]
            for i in range(a.streams):
                cmd += ["--camera", f"c{i}={srv.url('cam')}"]
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            names = [f"c{i}" for i in range(a.streams)]
            wait_for(lambda: all_up(port, names), 30)
            m0, t0 = scrape(port), time.monotonic()
            time.sleep(a.seconds)
            m1, t1 = scrape(port), time.monotonic()
            stop(p)
            g = lambda m, k: sum(m.get(f'gpunet_camera_{k}{{camera="{n}"}}', 0)  # noqa
                                 for n in names)
            cls = g(m1, "classified_total") - g(m0, "classified_total")
            r = dict(
                p50=max(m1.get(f'gpunet_camera_latency_p50_ms{{camera="{n}"}}', 0)
                        for n in names),
                p99=max(m1.get(f'gpunet_camera_latency_p99_ms{{camera="{n}"}}', 0)
                        for n in names),
                frames=g(m1, "frames_total") - g(m0, "frames_total"),
                classified=cls,
                skipped=g(m1, "skipped_total") - g(m0, "skipped_total"),
                wall_ms=(t1 - t0) * 1000 / cls if cls else float("nan"),
                pass_ms=m1.get("gpunet_engine_pass_ms", float("nan")))
            res[mode].append(r)
            print(f"round {rnd} {mode}: p50_ms={r['p50']:.0f} p99_ms={r['p99']:.0f} "
                  f"frames={r['frames']:.0f} classified={r['classified']:.0f} "
                  f"skipped={r['skipped']:.0f} pass_ms={r['pass_ms']:.1f} "
                  f"wall_ms_per_classified={r['wall_ms']:.0f}", flush=True)
finally:
    srv.kill()
for mode, rs in res.items():
    for k in ("p99", "pass_ms", "skipped"):
        if k == "pass_ms" and not all(x[k] == x[k] for x in rs):
            continue
        v = sorted(x[k] for x in rs)
        print(f"{mode} {k}: min={v[0]:.0f} median={statistics.median(v):.0f} "
              f"max={v[-1]:.0f}")
