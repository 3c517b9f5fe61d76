#!/usr/bin/env python3
"""Prints CPU seconds (user+system) used so far by a process, from /proc.

  cpu-seconds.py --pid PID         one process (and children it has reaped)
  cpu-seconds.py --postgres DATA   the postmaster of cluster DATA plus its live backends and
                                   every backend it has reaped (cutime/cstime)
"""
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        raw = f.read()
    fields = raw[raw.rindex(")") + 2:].split()
    # fields[0] is state (field 3); utime=14, stime=15, cutime=16, cstime=17, ppid=4
    return {"ppid": int(fields[1]), "utime": int(fields[11]), "stime": int(fields[12]),
            "cutime": int(fields[13]), "cstime": int(fields[14])}


def process_seconds(pid, with_children=True):
    s = stat(pid)
    ticks = s["utime"] + s["stime"] + (s["cutime"] + s["cstime"] if with_children else 0)
    return ticks / TICK


def postgres_seconds(data_dir):
    with open(os.path.join(data_dir, "postmaster.pid")) as f:
        master = int(f.readline())
    total = process_seconds(master)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                s = stat(int(entry))
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue
            if s["ppid"] == master:
                total += (s["utime"] + s["stime"]) / TICK
    return total


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("--pid", "--postgres"):
        sys.exit(__doc__)
    if sys.argv[1] == "--pid":
        print(f"{process_seconds(int(sys.argv[2])):.2f}")
    else:
        print(f"{postgres_seconds(sys.argv[2]):.2f}")
