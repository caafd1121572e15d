#!/usr/bin/env python3
"""Summarises an A/B log of bench/ab_h200.sh: the mean of each side over its rounds, per model and
bench, and each side's change against `old` (decode skipped where the bench decodes one token).

    python3 bench/ab_summary.py ab.log [more logs of the same A/B, e.g. its second round]

A side whose tokens differed from the first side measured is marked with "!" (ab_h200.sh flags it).
"""
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^r(\d+) (\S+) \[([^]]*)\] (\w+): TTFT ([\d.]+) ms \| prefill ([\d.]+) tok/s \| "
                  r"decode ([\d.]+) tok/s")


def main(paths):
    runs = defaultdict(lambda: defaultdict(list))  # (model, bench) -> side -> [(ttft, prefill, decode)]
    differ = set()
    sides = []
    for path in paths:
        for line in open(path):
            m = LINE.match(line)
            if not m:
                continue
            _, model, bench, side = m.group(1, 2, 3, 4)
            runs[(model, bench)][side].append(tuple(float(m.group(i)) for i in (5, 6, 7)))
            if "TOKENS DIFFER" in line:
                differ.add((model, bench, side))
            if side not in sides:
                sides.append(side)
    if not runs:
        sys.exit("ab_summary: no result lines in " + " ".join(paths))
    sides.sort(key=lambda s: (s != "old", s))
    for (model, bench), by_side in runs.items():
        decodes = "-n 1 " not in bench + " "
        print(f"{model} [{bench}]")
        base = {}
        for side in sides:
            rs = by_side.get(side)
            if not rs:
                continue
            mean = [sum(r[i] for r in rs) / len(rs) for i in range(3)]
            if side == "old":
                base = dict(zip(("ttft", "prefill", "decode"), mean))
            cols = [f"TTFT {mean[0]:9.2f} ms", f"prefill {mean[1]:9.1f}"]
            if decodes:
                cols.append(f"decode {mean[2]:8.1f}")
            if base and side != "old":
                # TTFT: lower is better, so the change is old / new - 1 (positive = faster).
                cols.append(f"TTFT {100 * (base['ttft'] / mean[0] - 1):+5.1f}%")
                cols.append(f"prefill {100 * (mean[1] / base['prefill'] - 1):+5.1f}%")
                if decodes and base["decode"] > 0:
                    cols.append(f"decode {100 * (mean[2] / base['decode'] - 1):+5.1f}%")
            mark = " !" if (model, bench, side) in differ else ""
            print(f"  {side:5} n={len(rs)} " + " | ".join(cols) + mark)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
