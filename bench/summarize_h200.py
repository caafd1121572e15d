#!/usr/bin/env python3
"""Turns one run_h200.sh output folder into results files (plain python3, no numpy).

Reads OUT/meta.env, OUT/raw/*.json (ztvm bench --json and llama-bench -o json outputs),
OUT/steps.txt and OUT/smi_trace.csv; writes
  OUT/h200-<date>-<time>.json  the full record: machine, driver, commits, flags, every round
  OUT/h200-latest.json         the summary rows of issue 5:
                               {shape, quant, metric, ours, llamacpp, ratio, date, commit}
Ratios are per round (the A/B pair of one round), and the summary gives their median (protocol
rule 2); ratio > 1 is always better for us (llama.cpp / ours for ttft_ms). It is safe to run at
any time during a run: whatever pairs exist are summarized.
"""
import argparse
import glob
import json
import os
import re
import statistics

# metric -> (higher is better). prefill_tps is the 512-token prompt, prefill_tps_1024 the 1024 one.
METRICS = {
    "decode_tps": True,
    "ttft_ms": False,
    "total_tps": True,
    "prefill_tps": True,
    "prefill_tps_1024": True,
    "decode_tps_4k": True,
}
N_GEN = 128
RAW_NAME = re.compile(r"^(?P<tag>.+)_r(?P<round>\d+)_(?P<kind>ours_p35|ours_p512|ours_p1024|ours_d4096|llamacpp|llamacpp_d4096)\.json$")


def read_meta(path):
    meta = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            if "=" in line:
                key, value = line.rstrip("\n").split("=", 1)
                meta[key] = value
    return meta


def load_json(path):
    """A JSON file, or None; a llama-bench array cut short by a timeout is closed and read."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError:
        end = text.rfind("}")
        if text.lstrip().startswith("[") and end > 0:
            try:
                return json.loads(text[: end + 1] + "]")
            except ValueError:
                return None
        return None


def split_tag(tag):
    """'llama-3.2-1b_Q4_K_M' -> ('llama-3.2-1b', 'Q4_K_M'): shape names have no underscore."""
    shape, _, quant = tag.partition("_")
    return shape, quant


def llama_entry(entries, n_prompt, n_gen, n_depth=0):
    for e in entries or []:
        if isinstance(e, dict) and e.get("n_prompt") == n_prompt and e.get("n_gen") == n_gen and e.get("n_depth", 0) == n_depth:
            return e
    return None


def ours_metrics(files):
    m, raw = {}, {}
    if files.get("ours_p35"):
        j = files["ours_p35"]
        m.update(decode_tps=j.get("decode_tps"), ttft_ms=j.get("ttft_ms"), total_tps=j.get("total_tps"))
        raw["weight_bytes_per_token"] = j.get("weight_bytes_per_token")
        raw["adapter"] = j.get("adapter")
        raw["p35"] = j.get("raw")
    if files.get("ours_p512"):
        m["prefill_tps"] = files["ours_p512"].get("prefill_tps")
        raw["p512"] = files["ours_p512"].get("raw")
    if files.get("ours_p1024"):
        m["prefill_tps_1024"] = files["ours_p1024"].get("prefill_tps")
        raw["p1024"] = files["ours_p1024"].get("raw")
    if files.get("ours_d4096"):
        m["decode_tps_4k"] = files["ours_d4096"].get("decode_tps")
        raw["d4096"] = files["ours_d4096"].get("raw")
    return {k: v for k, v in m.items() if isinstance(v, (int, float)) and v > 0}, raw


def llamacpp_metrics(files):
    """llama-bench tests -> our metrics. TTFT = pp32 time + one tg128 token time (issue 5)."""
    m, raw = {}, {}
    main, deep = files.get("llamacpp"), files.get("llamacpp_d4096")
    pp32, tg = llama_entry(main, 32, 0), llama_entry(main, 0, N_GEN)
    pp512, pp1024 = llama_entry(main, 512, 0), llama_entry(main, 1024, 0)
    tg4k = llama_entry(deep, 0, N_GEN, 4096)
    if tg:
        m["decode_tps"] = tg["avg_ts"]
    if pp32 and tg:
        pp32_s = pp32["avg_ns"] / 1e9
        m["ttft_ms"] = pp32_s * 1e3 + 1e3 / tg["avg_ts"]
        m["total_tps"] = N_GEN / (pp32_s + N_GEN / tg["avg_ts"])
    if pp512:
        m["prefill_tps"] = pp512["avg_ts"]
    if pp1024:
        m["prefill_tps_1024"] = pp1024["avg_ts"]
    if tg4k:
        m["decode_tps_4k"] = tg4k["avg_ts"]
    for name, e in (("pp32", pp32), ("tg128", tg), ("pp512", pp512), ("pp1024", pp1024), ("tg128_d4096", tg4k)):
        if e:
            raw[name] = {"avg_ns": e.get("avg_ns"), "avg_ts": e.get("avg_ts"), "samples_ns": e.get("samples_ns")}
    first = tg or pp32 or tg4k
    if first:
        raw.update(build_commit=first.get("build_commit"), gpu_info=first.get("gpu_info"), model_size=first.get("model_size"))
    return {k: v for k, v in m.items() if isinstance(v, (int, float)) and v > 0}, raw


def ratio(metric, ours, theirs):
    return theirs / ours if not METRICS[metric] else ours / theirs


def smi_summary(path):
    """SM clock, power and temperature while the GPU was busy (utilization >= 50%)."""
    clocks, power, temps = [], [], []
    if os.path.exists(path):
        for line in open(path, encoding="utf-8", errors="replace"):
            parts = [p.strip() for p in line.split(",")]
            try:
                if len(parts) >= 6 and float(parts[5]) >= 50:
                    clocks.append(float(parts[1]))
                    power.append(float(parts[3]))
                    temps.append(float(parts[4]))
            except ValueError:
                continue
    if not clocks:
        return None
    return {
        "samples_busy": len(clocks),
        "sm_mhz_min": min(clocks),
        "sm_mhz_median": statistics.median(clocks),
        "sm_mhz_max": max(clocks),
        "power_w_max": max(power),
        "temp_c_max": max(temps),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the run_h200.sh output folder")
    args = ap.parse_args()
    meta = read_meta(os.path.join(args.out, "meta.env"))
    date_time = meta.get("date", "unknown")
    date = date_time[:10]
    commit = meta.get("ztvm_commit", "unknown")

    # raw/<tag>_r<round>_<kind>.json -> by (tag, round)
    runs = {}
    for path in glob.glob(os.path.join(args.out, "raw", "*.json")):
        match = RAW_NAME.match(os.path.basename(path))
        if match:
            key = (match["tag"], int(match["round"]))
            runs.setdefault(key, {})[match["kind"]] = load_json(path)

    rounds, models = [], {}
    for (tag, rnd) in sorted(runs, key=lambda k: (k[1], k[0])):
        shape, quant = split_tag(tag)
        ours, ours_raw = ours_metrics(runs[(tag, rnd)])
        theirs, theirs_raw = llamacpp_metrics(runs[(tag, rnd)])
        pair = {m: ratio(m, ours[m], theirs[m]) for m in METRICS if m in ours and m in theirs}
        rounds.append({"shape": shape, "quant": quant, "round": rnd, "ours": ours, "llamacpp": theirs,
                       "ratio": pair, "ours_raw": ours_raw, "llamacpp_raw": theirs_raw})
        info = models.setdefault(tag, {"shape": shape, "quant": quant, "file_bytes": None, "weight_bytes_per_token": None})
        if meta.get(f"model.{tag}.bytes"):
            info["file_bytes"] = int(meta[f"model.{tag}.bytes"])
        if ours_raw.get("weight_bytes_per_token"):
            info["weight_bytes_per_token"] = ours_raw["weight_bytes_per_token"]
        if theirs_raw.get("model_size"):
            info["llamacpp_model_size"] = theirs_raw["model_size"]

    # Models made but never measured in a round still belong in the record (file sizes, "not measured").
    for m in meta.get("models_ready", "").split():
        shape, _, quant = m.partition(":")
        tag = f"{shape}_{quant}"
        info = models.setdefault(tag, {"shape": shape, "quant": quant, "file_bytes": None, "weight_bytes_per_token": None})
        if meta.get(f"model.{tag}.bytes"):
            info["file_bytes"] = int(meta[f"model.{tag}.bytes"])

    # Summary rows: medians over rounds; a ratio only from rounds where both engines have a number.
    summary = []
    for tag, info in models.items():
        mine = [r for r in rounds if r["shape"] == info["shape"] and r["quant"] == info["quant"]]
        for metric in METRICS:
            ours_v = [r["ours"][metric] for r in mine if metric in r["ours"]]
            theirs_v = [r["llamacpp"][metric] for r in mine if metric in r["llamacpp"]]
            ratios = [r["ratio"][metric] for r in mine if metric in r["ratio"]]
            if not ours_v and not theirs_v:
                continue
            summary.append({
                "shape": info["shape"], "quant": info["quant"], "metric": metric,
                "ours": statistics.median(ours_v) if ours_v else None,
                "llamacpp": statistics.median(theirs_v) if theirs_v else None,
                "ratio": statistics.median(ratios) if ratios else None,
                "date": date, "commit": commit,
            })

    solo = []
    for path in sorted(glob.glob(os.path.join(args.out, "raw", "solo_*.json"))):
        j = load_json(path)
        if j:
            shape, quant = split_tag(os.path.basename(path)[5:-5])
            solo.append({"shape": shape, "quant": quant, "decode_tps": j.get("decode_tps"), "ttft_ms": j.get("ttft_ms"),
                         "total_tps": j.get("total_tps")})

    steps = []
    steps_path = os.path.join(args.out, "steps.txt")
    if os.path.exists(steps_path):
        for line in open(steps_path, encoding="utf-8"):
            parts = line.split()
            if len(parts) == 3:
                steps.append({"name": parts[0], "rc": parts[1], "secs": parts[2]})

    record = {
        "kind": "h200-race",
        "date": date_time,
        "commits": {"ztvm": commit, "llamacpp": meta.get("llamacpp_commit", "unknown")},
        "machine": {"gpu": meta.get("gpu"), "driver": meta.get("driver"), "cpus": meta.get("cpus"),
                    "clocks_max": meta.get("clocks_max"), "under_load": smi_summary(os.path.join(args.out, "smi_trace.csv"))},
        "flags": {"ours": meta.get("ours_flags"), "llamacpp": meta.get("llamacpp_flags")},
        "llamacpp_binary": meta.get("llamacpp_binary"),
        "llamacpp_build_s": meta.get("llamacpp_build_s"),
        "models_requested": meta.get("models"),
        "models": list(models.values()),
        "rounds": rounds,
        "solo_during_build": solo,
        "summary": summary,
        "steps": steps,
        "notes": [
            "TTFT: ours = 35-token prompt to first token; llama.cpp = pp32 time + one tg128 token time (issue 5).",
            "prefill_tps: ours = prompt tokens / TTFT (includes the first token's LM head and sampling); llama.cpp = ppN.",
            "total_tps for llama.cpp = 128 / (pp32 time + 128 / tg128).",
            "solo_during_build runs are unpaired and made while llama.cpp compiled on the same CPUs: not used for ratios.",
        ],
    }
    stamp = date_time.replace("-", "").replace(":", "").replace("T", "-").rstrip("Z") or "unknown"
    with open(os.path.join(args.out, f"h200-{stamp}.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "h200-latest.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(f"{len(rounds)} model-rounds, {len(summary)} summary rows -> {args.out}/h200-{stamp}.json, h200-latest.json")


if __name__ == "__main__":
    main()
