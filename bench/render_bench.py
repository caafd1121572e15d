#!/usr/bin/env python3
"""Renders BENCH.md from bench/results/*.json (plain python3, no numpy).

Every number in the output is read from a results file (summarize_h200.py writes them); nothing
is typed in here. Per ../shared/BENCH_PROTOCOL.md: both engines side by side, same-run ratios
(median of the per-round ratios), TTFT / decode / total always together, decode GB/s against the
H200's 4.8 TB/s, the issue-5 targets marked met or missed with their number, withdrawn runs kept
with their reason, and the hand-written experiments log (bench/EXPERIMENTS.md) appended.

A results file is withdrawn by adding a top-level "withdrawn": "why" to it; it stays listed.
"""
import argparse
import glob
import re
import json
import os

PEAK_GBPS = 4800.0  # H200 HBM3e
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (metric, label, unit format) in table order; the first three are the protocol's "three numbers".
ROWS = [
    ("ttft_ms", "TTFT, 35-token prompt (ms; llama.cpp: pp32 + 1 token)", "ms"),
    ("decode_tps", "decode tok/s (128 tokens)", "tps"),
    ("total_tps", "total tok/s (128 tokens incl. prefill)", "tps"),
    ("decode_gbps", "decode GB/s (weights read per token × tok/s)", "gbps"),
    ("prefill_tps", "prefill tok/s, 512-token prompt", "tps"),
    ("prefill_tps_1024", "prefill tok/s, 1024-token prompt", "tps"),
    ("decode_tps_4k", "decode tok/s at 4096 tokens of context", "tps"),
]


def fmt(value, unit):
    if value is None:
        return "—"
    if unit == "ms":
        return f"{value:.2f}"
    if unit == "gbps":
        return f"{value:,.0f} ({100 * value / PEAK_GBPS:.0f}% of peak)" if value >= 100 else f"{value:.2f} (0% of peak)"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def fmt_ratio(r):
    return "—" if r is None else f"{r:.2f}×"


def load_records(results_dir):
    records, skipped = [], []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            data = json.load(open(path, encoding="utf-8"))
        except (OSError, ValueError) as e:
            skipped.append(f"{os.path.basename(path)} (unreadable: {e})")
            continue
        if isinstance(data, dict) and data.get("kind") == "h200-race":
            data["_file"] = os.path.basename(path)
            records.append(data)
        elif os.path.basename(path) != "h200-latest.json":  # the summary rows repeat a full record
            skipped.append(f"{os.path.basename(path)} (not a run record)")
    records.sort(key=lambda r: r.get("date", ""))
    return records, skipped


def summary_index(record):
    return {(s["shape"], s["quant"], s["metric"]): s for s in record.get("summary", [])}


def bytes_per_token(record, shape, quant):
    for m in record.get("models", []):
        if m["shape"] == shape and m["quant"] == quant:
            return m.get("weight_bytes_per_token")
    return None


def cell(record, idx, shape, quant, metric):
    """(ours, llamacpp, ratio, per-round ratios) for one table row; GB/s derived from decode."""
    if metric == "decode_gbps":
        s = idx.get((shape, quant, "decode_tps"))
        bpt = bytes_per_token(record, shape, quant)
        if not s or not bpt:
            return None, None, None, []
        def gbps(tps):
            return None if tps is None else bpt * tps / 1e9
        return gbps(s["ours"]), gbps(s["llamacpp"]), s["ratio"], []
    s = idx.get((shape, quant, metric))
    if not s:
        return None, None, None, []
    per_round = [r["ratio"][metric] for r in record.get("rounds", [])
                 if r["shape"] == shape and r["quant"] == quant and metric in r.get("ratio", {})]
    return s["ours"], s["llamacpp"], s["ratio"], per_round


def targets(record):
    """Issue 5's targets, each (target, model, number text, status)."""
    idx, out = summary_index(record), []
    models = [(m["shape"], m["quant"]) for m in record.get("models", [])]

    def ratio_target(label, shape, quant, metric, threshold):
        s = idx.get((shape, quant, metric))
        if not s or s["ratio"] is None:
            out.append((label, f"{shape} {quant}", "no same-run pair", "not measured"))
            return
        unit = "ms" if metric == "ttft_ms" else "tps"
        rounds = cell(record, idx, shape, quant, metric)[3]
        text = (f"{s['ratio']:.2f}× (ztvm {fmt(s['ours'], unit)}, llama.cpp {fmt(s['llamacpp'], unit)}; "
                f"{len(rounds)} round{'' if len(rounds) == 1 else 's'})")
        # A median at the line says less than one every round clears: the status says which it is.
        if s["ratio"] < threshold:
            status = "missed"
        elif len(rounds) < 2:
            status = "met in one round"
        elif min(rounds) < threshold:
            status = "met by the median, not every round"
        else:
            status = "met"
        out.append((label, f"{shape} {quant}", text, status))

    for shape, quant in models:
        if shape in ("llama-3.2-1b", "qwen3-4b"):
            ratio_target("decode ≥ 1.5× llama.cpp", shape, quant, "decode_tps", 1.5)
            ratio_target("decode ≥ 1.5× llama.cpp at 4096 context", shape, quant, "decode_tps_4k", 1.5)
        ratio_target("TTFT ≤ llama.cpp's (35-token prompt)", shape, quant, "ttft_ms", 1.0)
        ratio_target("prefill ≥ 0.5× llama.cpp, 512 tokens", shape, quant, "prefill_tps", 0.5)
        ratio_target("prefill ≥ 0.5× llama.cpp, 1024 tokens", shape, quant, "prefill_tps_1024", 0.5)
        if shape == "qwen3-4b":
            s, bpt = idx.get((shape, quant, "decode_tps")), bytes_per_token(record, shape, quant)
            if s and s["ours"] and bpt:
                gbps = bpt * s["ours"] / 1e9
                out.append(("decode ≥ 50% of 4.8 TB/s", f"{shape} {quant}",
                            f"{gbps:,.0f} GB/s = {100 * gbps / PEAK_GBPS:.0f}%", "met" if gbps >= PEAK_GBPS / 2 else "missed"))
            else:
                out.append(("decode ≥ 50% of 4.8 TB/s", f"{shape} {quant}", "no decode number", "not measured"))
    return out


def read_chain_floors(results_dir):
    """The newest `ztvm gpu --read-chain` record (bench/read_chain_h200.sh): (file, [(spec, dispatches,
    floor us, GB/s)]) from its GPU-timed floor lines, or None."""
    files = sorted(glob.glob(os.path.join(results_dir, "read-chain-*-h200.txt")))
    if not files:
        return None
    rows, spec = [], None
    for line in open(files[-1], encoding="utf-8"):
        m = re.match(r"read chain (\S+): (\d+) dispatches", line)
        if m:
            spec = (m.group(1), int(m.group(2)))
        m = re.search(r"floor: ([\d.]+) us a chain \(GPU timestamps\), [\d.]+ MB read at ([\d.]+) GB/s", line)
        if m and spec:
            rows.append((spec[0], spec[1], float(m.group(1)), float(m.group(2))))
            spec = None
    return os.path.basename(files[-1]), rows


def render_floor(results_dir, lines):
    got = read_chain_floors(results_dir)
    if not got or not got[1]:
        return
    name, rows = got
    lines += ["### The floor under a decode step", "",
              "A chain of dispatches that only read, one per matrix with a barrier between each two as in a decode",
              "step (`ztvm gpu --read-chain`, sizes in MB; GPU time from timestamps; "
              f"`bench/results/{name}`). Rows: an empty dispatch; Llama-3.2-1B Q4_0 and Qwen3-4B Q4_0 decode steps",
              "at ~100 and 4,131 positions. No kernel chain of that shape reads faster on this GPU under Dawn, so a",
              "GB/s target above its floor is out of reach of one dispatch per matrix (bench/EXPERIMENTS.md, 2026-12-04).", "",
              "| chain (MB per dispatch) | dispatches | µs a chain | µs a dispatch | GB/s | of 4.8 TB/s |",
              "|---|---|---|---|---|---|"]
    for spec, n, us, gbps in rows:
        lines.append(f"| `{spec}` | {n} | {us:,.1f} | {us / n:.2f} | {gbps:,.0f} | {100 * gbps / PEAK_GBPS:.0f}% |")
    lines.append("")


def render_run(record, lines):
    c, mach = record.get("commits", {}), record.get("machine", {})
    load = mach.get("under_load") or {}
    lines.append(f"Run {record.get('date')} — ztvm `{c.get('ztvm')}`, llama.cpp `{c.get('llamacpp')}` "
                 f"(file `bench/results/{record['_file']}`).\n")
    lines.append(f"- GPU: {mach.get('gpu') or 'unknown'}, driver {mach.get('driver') or 'unknown'}, "
                 f"max clocks {mach.get('clocks_max') or 'unknown'}; "
                 + (f"SM clock while busy {load['sm_mhz_min']:.0f}–{load['sm_mhz_max']:.0f} MHz "
                    f"(median {load['sm_mhz_median']:.0f}), power ≤ {load['power_w_max']:.0f} W"
                    if load else "no clock trace under load"))
    lines.append(f"- ztvm: `{(record.get('flags') or {}).get('ours')}`")
    lines.append(f"- llama.cpp (CUDA, flash attention on, all layers on the GPU; binary {record.get('llamacpp_binary')}): "
                 f"`llama-bench {(record.get('flags') or {}).get('llamacpp')}`")
    n_rounds = max([r["round"] for r in record.get("rounds", [])] or [0])
    lines.append(f"- Interleaved rounds: {n_rounds} (each: ztvm, then llama.cpp, on the same file); "
                 "ratios are the median of per-round ratios, > 1 is better for ztvm.\n")
    for note in record.get("notes", []):
        lines.append(f"  - {note}")
    lines.append("")

    lines.append("### Targets (issue 5)\n")
    lines.append("| target | model | number | status |")
    lines.append("|---|---|---|---|")
    rows = targets(record)
    for label, model, text, status in rows:
        mark = f"**{status}**" if status.startswith("met") else status
        lines.append(f"| {label} | {model} | {text} | {mark} |")
    if any(label.startswith("decode ≥ 50%") and status == "missed" for label, _, _, status in rows):
        lines.append("\nThe GB/s target's reason, measured: \"The floor under a decode step\" below.")
    lines.append("")

    idx = summary_index(record)
    for m in record.get("models", []):
        shape, quant = m["shape"], m["quant"]
        size = f"{m['file_bytes']:,} bytes" if m.get("file_bytes") else "size not recorded"
        bpt = m.get("weight_bytes_per_token")
        lines.append(f"### {shape} {quant} — one GGUF file for both engines, {size}"
                     + (f", {bpt / 1e6:,.1f} MB of weights read per token" if bpt else "") + "\n")
        lines.append("| | ztvm | llama.cpp | ratio | per-round ratios |")
        lines.append("|---|---|---|---|---|")
        for metric, label, unit in ROWS:
            ours, theirs, r, per_round = cell(record, idx, shape, quant, metric)
            if ours is None and theirs is None:
                continue
            if metric == "decode_gbps":
                r, per_round = None, []  # the same ratio as decode tok/s
            lines.append(f"| {label} | {fmt(ours, unit)} | {fmt(theirs, unit)} | {fmt_ratio(r)} | "
                         + ", ".join(f"{x:.2f}" for x in per_round) + " |")
        lines.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--experiments", default=os.path.join(ROOT, "bench", "EXPERIMENTS.md"))
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCH.md"))
    args = ap.parse_args()
    records, skipped = load_records(args.results)
    live = [r for r in records if not r.get("withdrawn")]
    withdrawn = [r for r in records if r.get("withdrawn")]

    lines = ["# Benchmarks: ztvm (WGSL on Dawn/Vulkan) vs llama.cpp (CUDA) on one H200", "",
             "Generated by `bench/render_bench.py` from `bench/results/*.json`; do not edit by hand (the",
             "experiments log at the end comes from `bench/EXPERIMENTS.md`). Method: `../shared/BENCH_PROTOCOL.md` —",
             "identical GGUF bytes for both engines (random weights of the real shapes, made by `ztvm synth`),",
             "interleaved A/B rounds in one run, TTFT + decode + total together, every run a full prefill,",
             "tokens verified across runs.", ""]
    if not live:
        lines += ["No H200 run is on record yet.", ""]
    else:
        lines += ["## Latest H200 run", ""]
        render_run(live[-1], lines)
        render_floor(args.results, lines)
        if len(live) > 1:
            lines += ["## Earlier runs", "", "| date | ztvm | llama.cpp | model | decode | TTFT | prefill 512 | decode @4k |",
                      "|---|---|---|---|---|---|---|---|"]
            for rec in reversed(live[:-1]):
                idx = summary_index(rec)
                for m in rec.get("models", []):
                    k = (m["shape"], m["quant"])
                    cells = [fmt_ratio((idx.get(k + (met,)) or {}).get("ratio"))
                             for met in ("decode_tps", "ttft_ms", "prefill_tps", "decode_tps_4k")]
                    lines.append(f"| {rec.get('date', '')[:10]} | `{rec['commits'].get('ztvm', '')[:9]}` | "
                                 f"`{rec['commits'].get('llamacpp', '')[:9]}` | {k[0]} {k[1]} | " + " | ".join(cells) + " |")
            lines.append("")
    if withdrawn:
        lines += ["## Withdrawn", "", "Runs whose numbers were wrong stay on record with the reason.", ""]
        for rec in withdrawn:
            lines.append(f"- ~~{rec.get('date')} (`{rec['_file']}`)~~ — withdrawn: {rec['withdrawn']}")
        lines.append("")
    if skipped:
        lines += ["Files in the results folder that are not run records: " + ", ".join(skipped), ""]
    lines += ["## Experiments log", ""]
    if os.path.exists(args.experiments):
        # Its own headings would clash with this document's: demote them one level (not inside code).
        in_code = False
        for line in open(args.experiments, encoding="utf-8").read().strip().splitlines():
            in_code ^= line.lstrip().startswith("```")
            lines.append("#" + line if line.startswith("#") and not in_code else line)
    else:
        lines.append("(none yet: write experiments, wins and losses, in `bench/EXPERIMENTS.md`)")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    print(f"wrote {args.out}: {len(live)} run(s), {len(withdrawn)} withdrawn")


if __name__ == "__main__":
    main()
