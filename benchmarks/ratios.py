#!/usr/bin/env python3
"""Reads Google Benchmark JSON and prints each xpr benchmark as a ratio to its hand-written twin
(BM_xpr_X<T> / BM_hand_X<T>), plus absolute ns for benchmarks without a twin (dispatch costs)."""
import json
import sys

data = json.load(open(sys.argv[1]))
times = {b["name"]: b["real_time"] for b in data["benchmarks"] if b.get("run_type") != "aggregate"
         or b.get("aggregate_name") == "median"}
times = {k.replace("_median", ""): v for k, v in times.items()}
skip = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads", "iterations",
        "real_time", "cpu_time", "time_unit", "family_index", "per_family_instance_index",
        "aggregate_name", "aggregate_unit"}
counters = {b["name"].replace("_median", ""): {k: v for k, v in b.items() if k not in skip}
            for b in data["benchmarks"] if b.get("aggregate_name", "median") == "median"}
print(f"{'benchmark':40} {'xpr':>12} {'hand':>12} {'ratio':>8}")
for name, t in times.items():
    if "_xpr_" in name:
        hand = name.replace("_xpr_", "_hand_")
        if hand in times:
            print(f"{name:40} {t:12.1f} {times[hand]:12.1f} {t / times[hand]:8.3f}")
    elif name.startswith("BM_jvp") or name.startswith("BM_vmap"):
        base = "BM_eager" + name[name.index("<"):]
        if base in times:
            print(f"{name:40} {t:12.1f} {times[base]:12.1f} {t / times[base]:8.3f}  (vs eager)")
    elif "_hand_" not in name and not name.startswith("BM_eager"):
        c = counters.get(name, {})
        extra = f"  {t / c['equations'] / 1000:.3f} us per equation" if "equations" in c else ""
        print(f"{name:40} {t:12.1f} {'':>12} {'(ns)':>8}{extra}")
