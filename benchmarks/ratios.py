"""Print a Markdown table of speed-ups from a saved pytest-benchmark JSON run.

Usage:
    pytest benchmarks --benchmark-json=bench.json
    python benchmarks/ratios.py bench.json

Each benchmark records ``extra_info = {"role": ..., "label": ..., "scale": ...}``. In every
group the entry with role "ours" is compared with each "baseline" entry:
speed-up = (baseline median x scale) / ours median, where ``scale`` extrapolates a
baseline timed on a subset of the job (e.g. a Python loop over 1,000 of 10,000 shards) to
the whole job. A speed-up below 1 means the baseline is faster (expected for the memory
floor, which computes nothing but a sum). Entries with role "ours-variant" are listed
with their ratio to "ours" for information. Groups of role "scaling" (the same job at
several thread counts, each recording ``threads``) get a second table: the speed-up over
one thread and the efficiency per thread count.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict


def _fmt_time(seconds: float) -> str:
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= factor:
            return f"{seconds / factor:.3g} {unit}"
    return f"{seconds:.3g} s"


def table(data: dict) -> str:
    groups: dict[str, list[dict]] = defaultdict(list)
    for bench in data["benchmarks"]:
        groups[bench.get("group") or bench["name"]].append(bench)
    lines = [
        "| Job | Compared with | Baseline (median) | Ours (median) | Speed-up |",
        "|---|---|---:|---:|---:|",
    ]
    for group, benches in groups.items():
        if all(b.get("extra_info", {}).get("role") == "scaling" for b in benches):
            continue  # printed by scaling_table()
        ours = [b for b in benches if b.get("extra_info", {}).get("role") == "ours"]
        if len(ours) != 1:
            print(
                f"warning: group {group!r} has {len(ours)} 'ours' entries; skipped",
                file=sys.stderr,
            )
            continue
        ours_median = ours[0]["stats"]["median"]
        for bench in benches:
            info = bench.get("extra_info", {})
            role = info.get("role")
            if role not in ("baseline", "ours-variant"):
                continue
            label = info.get("label", bench["name"])
            median = bench["stats"]["median"] * float(info.get("scale", 1.0))
            ratio = median / ours_median
            shown = f"{ratio:.3g}×" if role == "baseline" else f"({ratio:.3g}× ours)"
            lines.append(
                f"| {group} | {label} | {_fmt_time(median)} | {_fmt_time(ours_median)} | {shown} |"
            )
    return "\n".join(lines)


def scaling_table(data: dict) -> str:
    """Speed-up over one thread, per thread count, of every group of "scaling" entries
    (each records ``threads``); efficiency = speed-up / threads. Empty if there are none."""
    groups: dict[str, dict[int, float]] = defaultdict(dict)
    for bench in data["benchmarks"]:
        info = bench.get("extra_info", {})
        if info.get("role") == "scaling":
            group = bench.get("group") or bench["name"]
            groups[group][int(info["threads"])] = bench["stats"]["median"]
    lines = []
    for group, medians in groups.items():
        if 1 not in medians:
            print(
                f"warning: scaling group {group!r} has no 1-thread entry; skipped", file=sys.stderr
            )
            continue
        if not lines:
            lines += [
                "| Job | Threads | Median | Speed-up over 1 thread | Efficiency |",
                "|---|---:|---:|---:|---:|",
            ]
        for threads in sorted(medians):
            speed_up = medians[1] / medians[threads]
            lines.append(
                f"| {group} | {threads} | {_fmt_time(medians[threads])} | {speed_up:.2f}× "
                f"| {speed_up / threads:.0%} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_file", help="output of pytest --benchmark-json=FILE")
    args = parser.parse_args(argv)
    with open(args.json_file, encoding="utf-8") as handle:
        data = json.load(handle)
    machine = data.get("machine_info", {})
    cpu = machine.get("cpu", {})
    print(table(data))
    print()
    scaling = scaling_table(data)
    if scaling:
        print(scaling)
        print()
    # The README names the machine of the run it quotes: this line says what to write.
    print(
        f"Medians from one run on {data.get('datetime', '?')[:10]}: "
        f"{cpu.get('brand_raw', 'unknown CPU')}, {cpu.get('count', '?')} logical cores, "
        f"{machine.get('system', '?')}, {machine.get('python_implementation', 'Python')} "
        f"{machine.get('python_version', '?')}; baselines measured in the same run."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
