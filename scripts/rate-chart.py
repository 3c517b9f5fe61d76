#!/usr/bin/env python3
"""Per-second Apple calls of one team, from the sandbox's GET /__sandbox/rate, for the benchmarks.

  rate-chart.py RATE.json TEAM T0 T1 [--skip S] [--tail S] [--chart] [--target RPS --tolerance F]

T0/T1: epoch seconds of the run's start and end. Prints (with --chart) one bar per second of
accepted calls (answered other than 429; '!' marks seconds with 429s), then one line:
  accepted_mean/min/max over the seconds from T0+skip to T1-tail (whole seconds only),
  calls, 429s and their share, Retry-After early requests, and (with --target) whether the
  mean, min and max are within target x (1 +- tolerance).
"""
import argparse
import json
import math

p = argparse.ArgumentParser()
p.add_argument("rate")
p.add_argument("team")
p.add_argument("t0", type=float)
p.add_argument("t1", type=float)
p.add_argument("--skip", type=float, default=10)
p.add_argument("--tail", type=float, default=2)
p.add_argument("--chart", action="store_true")
p.add_argument("--target", type=float)
p.add_argument("--tolerance", type=float, default=0.1)
a = p.parse_args()

team = json.load(open(a.rate))["teams"].get(a.team, {})
seconds = {s["t"]: s for s in team.get("seconds", [])}
first, last = math.floor(a.t0), math.floor(a.t1)
if a.chart:
    peak = max([s["accepted"] for s in seconds.values()] + [1])
    for t in range(first, last + 1):
        s = seconds.get(t, {"accepted": 0, "throttled": 0})
        bar = "#" * round(50 * s["accepted"] / peak)
        mark = f" !{s['throttled']}x429" if s["throttled"] else ""
        print(f"  t+{t - first:3d}s {s['accepted']:6d} {bar}{mark}")
window = [seconds.get(t, {"accepted": 0})["accepted"] for t in range(math.ceil(a.t0 + a.skip), math.floor(a.t1 - a.tail))]
accepted, throttled = team.get("accepted", 0), team.get("throttled", 0)
calls = accepted + throttled
line = (f"accepted_per_s after {a.skip:.0f}s (to {a.tail:.0f}s before the end, {len(window)} s): "
        f"mean={sum(window) / max(1, len(window)):.1f} min={min(window, default=0)} max={max(window, default=0)} "
        f"calls={calls} http_429={throttled} share_429={100 * throttled / max(1, calls):.2f}% "
        f"early_requests={team.get('early_requests', 0)}")
if a.target:
    lo, hi = a.target * (1 - a.tolerance), a.target * (1 + a.tolerance)
    mean = sum(window) / max(1, len(window))
    ok = window and lo <= mean <= hi and lo <= min(window) and max(window) <= hi
    line += f" target={a.target:.0f}+-{100 * a.tolerance:.0f}% {'within' if ok else 'NOT within'}"
print(line)
