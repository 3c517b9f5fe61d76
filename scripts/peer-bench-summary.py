#!/usr/bin/env python3
"""Prints scripts/peer-bench.sh's table from its JSON lines (one per system, concurrency and round):
every row, then (with more than one round) the median of each figure per system and concurrency,
then the ratios siwa-jobs / peer at each concurrency, from the medians.

  peer-bench-summary.py E2E_JSONL
"""
import json
import statistics
import sys

FIGURES = ("items_per_s", "drain_cpu_s", "pg_cpu_s", "vacuum_cpu_s", "hot_pct", "sandbox_cpu_s",
           "proxy_cpu_s", "peak_rss_mb")


def table(rows, title):
    print(f"\n{title}")
    print(f"{'system':<12}{'C':>5}{'round':>6}{'items/s':>9}{'of C/L':>8}{'client CPU ms/item':>20}{'PG ms/item':>11}"
          f"{'vacuum ms/item':>15}{'HOT %':>6}{'sandbox ms/item':>16}{'proxy ms/item':>14}{'RSS MB':>8}{'valid/invalid':>15}")
    for r in rows:
        n = r["n"]
        print(f"{r['system']:<12}{r['concurrency']:>5}{r.get('round', 1):>6}{r['items_per_s']:>9.0f}"
              f"{100 * r['items_per_s'] / r['bound_per_s']:>7.0f}%{1000 * r['drain_cpu_s'] / n:>20.3f}"
              f"{1000 * r['pg_cpu_s'] / n:>11.3f}{1000 * r.get('vacuum_cpu_s', 0) / n:>15.3f}{r.get('hot_pct', 0):>6.0f}"
              f"{1000 * r['sandbox_cpu_s'] / n:>16.3f}{1000 * r.get('proxy_cpu_s', 0) / n:>14.3f}"
              f"{r['peak_rss_mb']:>8.1f}{str(r.get('valid', '-')) + '/' + str(r.get('invalid', '-')):>15}")


def medians(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["system"], r["concurrency"]), []).append(r)
    out = []
    for (system, c), rs in groups.items():
        m = dict(rs[0])
        m["round"] = "med"
        for f in FIGURES:
            m[f] = statistics.median(r.get(f, 0) for r in rs)
        out.append(m)
    return out


def ratios(rows, label):
    by = {(r["system"], r["concurrency"]): r for r in rows}
    for c in sorted({r["concurrency"] for r in rows}):
        s = by.get(("siwa-jobs", c))
        for peer in ("python-peer", "go-peer"):
            p = by.get((peer, c))
            if s and p:
                with_vacuum = (s["pg_cpu_s"] + s.get("vacuum_cpu_s", 0)) / max(p["pg_cpu_s"] + p.get("vacuum_cpu_s", 0), 0.01)
                print(f"{label}C={c} vs {peer}: throughput {s['items_per_s'] / p['items_per_s']:.2f}x; client CPU per item "
                      f"{s['drain_cpu_s'] / p['drain_cpu_s']:.2f}x; PG CPU per item {s['pg_cpu_s'] / max(p['pg_cpu_s'], 0.01):.2f}x"
                      f" (with each side's vacuum {with_vacuum:.2f}x)")


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    table(rows, "every round")
    rounds = sorted({r.get("round", 1) for r in rows})
    if len(rounds) > 1:
        for k in rounds:
            ratios([r for r in rows if r.get("round", 1) == k], f"round {k}: ")
        summary = medians(rows)
        table(summary, f"medians of {len(rounds)} rounds")
        ratios(summary, "median: ")
    else:
        ratios(rows, "")


if __name__ == "__main__":
    main(sys.argv[1])
