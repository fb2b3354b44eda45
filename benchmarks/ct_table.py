#!/usr/bin/env python3
"""Prints the compile-time tier benchmark table from Google Benchmark JSON files of
benchmarks/ct/*.cpp (benchmark names `<workload>/<dtype>/<contender>`, a `points` counter).

Each contender is shown as ns per point and as ratios to the hand-written xsimd loop and the
hand-written scalar loop of the same workload and dtype, measured in the same run. Times are
CPU times (single-threaded, so on an idle machine the run time; on a shared one less disturbed
than wall time), the minimum over the repetitions when the JSON holds each repetition (other
load only ever adds time), else the median aggregate.

Usage: benchmarks/ct_table.py [--markdown] results/*.json
"""
import json
import sys
from collections import OrderedDict

GOALS = {"w1": 1.05, "w2_n16": 1.10, "w2_n64": 1.10, "w3": 1.10}
TITLES = {"w1": "W1 value + 3 partials", "w2_n16": "W2 Rosenbrock grad, n=16",
          "w2_n64": "W2 Rosenbrock grad, n=64", "w3": "W3 Black-Scholes + 3 Greeks"}
ORDER = ["hand_scalar", "hand_xsimd", "xpr", "xpr_run", "xpr_batch", "ceres_jet",
         "adolc_tapeless", "adolc_taped", "boost_autodiff"]
NAMES = {"hand_scalar": "hand scalar", "hand_xsimd": "hand xsimd", "xpr": "xpr (vmap)",
         "xpr_run": "xpr (compiled_t loop)", "xpr_batch": "xpr (grad on batches)",
         "ceres_jet": "Ceres Jet", "adolc_tapeless": "ADOL-C tapeless",
         "adolc_taped": "ADOL-C taped", "boost_autodiff": "Boost autodiff"}
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(paths):
    """{(workload, dtype): {contender: ns per point}} from the medians (or single runs)."""
    reps, medians = {}, {}
    for path in paths:
        for b in json.load(open(path))["benchmarks"]:
            if b.get("error_occurred"):
                continue
            parts = b.get("run_name", b["name"]).split("/")
            if len(parts) != 3 or "points" not in b:
                continue
            kind = b.get("run_type", "iteration")
            if kind == "aggregate" and b.get("aggregate_name") != "median":
                continue
            ns = b["cpu_time"] * TO_NS[b["time_unit"]] / b["points"]
            into = reps if kind == "iteration" else medians
            into.setdefault((parts[0], parts[1]), {}).setdefault(parts[2], []).append(ns)
    table = OrderedDict()
    keys = set(reps) | set(medians)
    for key in sorted(keys, key=lambda k: (list(GOALS).index(k[0]) if k[0] in GOALS else 99, k[1] != "f64")):
        row = {c: v[0] for c, v in medians.get(key, {}).items()}
        row.update({c: min(v) for c, v in reps.get(key, {}).items()})
        table[key] = row
    return table


def fmt(ns):
    """ns per point: three significant digits, no exponent."""
    return f"{ns:.0f}" if ns >= 100 else f"{ns:.3g}"


def contenders(table):
    seen = {c for row in table.values() for c in row}
    return [c for c in ORDER if c in seen] + sorted(seen - set(ORDER))


def main():
    args = sys.argv[1:]
    markdown = "--markdown" in args
    table = load([a for a in args if a != "--markdown"])
    cols = contenders(table)
    if markdown:
        print("Ratio to the hand-written xsimd loop (ns per point in parentheses):\n")
        print("| workload | dtype | " + " | ".join(NAMES.get(c, c) for c in cols) + " | goal |")
        print("|---|---|" + "---:|" * len(cols) + "---:|")
    else:
        print(f"{'workload':28} {'dtype':5} " + " ".join(f"{NAMES.get(c, c)[:16]:>16}" for c in cols))
    for (w, dt), row in table.items():
        base = row.get("hand_xsimd")
        cells = []
        for c in cols:
            if c not in row:
                cells.append("n/a")
            elif base:
                cells.append(f"{row[c] / base:.2f} ({fmt(row[c])})" if markdown
                             else f"{row[c] / base:7.2f} {fmt(row[c]):>6}ns")
            else:
                cells.append(f"({fmt(row[c])} ns)")
        goal = GOALS.get(w)
        if markdown:
            print(f"| {TITLES.get(w, w)} | {dt} | " + " | ".join(cells) + f" | {'<= %.2f' % goal if goal else ''} |")
        else:
            print(f"{TITLES.get(w, w)[:28]:28} {dt:5} " + " ".join(f"{x:>16}" for x in cells))
    # The same contenders against the hand-written scalar loop (what most C++ code is).
    if markdown:
        print("\nRatio to the hand-written scalar loop (below 1: faster than it):\n")
        print("| workload | dtype | " + " | ".join(NAMES.get(c, c) for c in cols if c != "hand_scalar") + " |")
        print("|---|---|" + "---:|" * (len(cols) - 1))
    else:
        print("\nagainst the hand-written scalar loop:")
        print(f"{'workload':28} {'dtype':5} " + " ".join(f"{NAMES.get(c, c)[:16]:>16}" for c in cols
                                                       if c != "hand_scalar"))
    for (w, dt), row in table.items():
        base = row.get("hand_scalar")
        cells = [("n/a" if c not in row or not base else f"{row[c] / base:.2f}")
                 for c in cols if c != "hand_scalar"]
        if markdown:
            print(f"| {TITLES.get(w, w)} | {dt} | " + " | ".join(cells) + " |")
        else:
            print(f"{TITLES.get(w, w)[:28]:28} {dt:5} " + " ".join(f"{x:>16}" for x in cells))


if __name__ == "__main__":
    main()
