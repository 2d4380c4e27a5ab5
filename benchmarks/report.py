"""The report of a run: results/latest.json (every figure), latest.md (one table to read
at a glance) and latest.png (the throughput ratios against their targets)."""

import json
import math
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.common import NOISY_LOAD, QUICK, REPEAT, SECTIONS, Figure

RESULTS = Path(__file__).parent / "results"
THROUGHPUT_UNITS = ("MB/s", "IOPS")


def _number(x: float | None) -> str:
    """A number with about three significant digits, or a dash."""
    if x is None or math.isnan(x):
        return "—"
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _spread(x: float | None, spread: tuple[float, float] | None) -> str:
    """A median with the lowest and highest of its runs: 1.23 (1.1–1.4)."""
    if spread is None or spread[0] == spread[1]:
        return _number(x)
    return f"{_number(x)} ({_number(spread[0])}–{_number(spread[1])})"


def _result(f: Figure) -> str:
    if f.error and (f.arkfs is None or (f.reference_name and f.reference is None)):
        return "**missing**"
    return {True: "met", False: "**missed**", None: "—"}[f.met]


def noisy_run(run: dict[str, Any]) -> bool:
    """Whether other work loaded the machine when the run began (the load average taken
    later counts the bench's own processes, so only the first one tells)."""
    return run["load_before"][0] > NOISY_LOAD


def machine() -> dict[str, object]:
    """What the run ran on."""
    return {
        "cores": os.cpu_count(),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def write_json(figures: list[Figure], run: dict[str, object]) -> Path:
    """results/latest.json: the machine, the run, and every figure with ratio and verdict."""
    record = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "run": run | {"quick": QUICK, "repeat": REPEAT, "noisy": noisy_run(run)},
        "figures": [asdict(f) | {"ratio": f.ratio, "met": f.met} for f in figures],
    }
    out = RESULTS / "latest.json"
    out.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return out


def write_markdown(figures: list[Figure], run: dict[str, object]) -> Path:
    """results/latest.md: a table per section, then notes and errors."""
    m = machine()
    memory = m["memory_bytes"] / 2**30  # type: ignore[operator]
    lines = [
        "# arkfs benchmark report",
        "",
        f"`make bench` on {time.strftime('%Y-%m-%d', time.gmtime())}: {m['cores']} cores, "
        f"{memory:.0f} GiB of memory, Linux {m['kernel']}, Python {m['python']}. "
        f"The whole run took {run['seconds'] / 60:.1f} min"  # type: ignore[operator]
        + (" (**quick mode: small corpora, not comparable**)" if QUICK else "")
        + f". Each number is the median of {REPEAT} runs, their lowest and highest in "
        "parentheses (peak RSS: their maximum). "
        f"Load average before and after: {run['load_before'][0]:.1f}, "  # type: ignore[index]
        f"{run['load_after'][0]:.1f}; other work on the machine adds noise. "  # type: ignore[index]
        f"Memory: {run['free_memory']}.",
        "",
        f"**Noisy run**: the 1-minute load average was above {NOISY_LOAD:g} when it began "
        "(other work on the machine), so its ratios are not reliable."
        if noisy_run(run)
        else f"Quiet run: the load average was at or below {NOISY_LOAD:g} when it began. "
        "The load noted after each benchmark counts the bench's own processes.",
        "",
        "Ratio is arkfs / reference. The target bounds the ratio, or the arkfs value itself "
        "where there is no reference. Higher is better for MB/s and IOPS; lower for "
        "seconds, latency, bytes and memory.",
        "",
        "![throughput ratios](latest.png)",
    ]
    notes: dict[str, int] = {}  # text: number
    for section in (*SECTIONS, *{f.section for f in figures} - set(SECTIONS)):
        if not any(f.section == section for f in figures):
            continue
        lines += [
            "",
            f"## {section}",
            "",
            "| figure | arkfs | reference | ratio | target | result |",
            "|---|---:|---|---:|---|---|",
        ]
        for f in (f for f in figures if f.section == section):
            ref = "—"
            if f.reference_name:
                ref = f"{_spread(f.reference, f.reference_spread)} ({f.reference_name})"
            name = f"{f.name} ({f.unit})"
            for text in filter(None, (f.note, f.error)):
                name += f" [{notes.setdefault(text, len(notes) + 1)}]"
            lines.append(
                f"| {name} | {_spread(f.arkfs, f.spread)} | {ref} | {_number(f.ratio)} "
                f"| {f.target or '—'} | {_result(f)} |"
            )
    if notes:
        lines += ["", "## Notes and errors", ""]
        lines += [f"{number}. {text}" for text, number in notes.items()]
    out = RESULTS / "latest.md"
    out.write_text("\n".join(lines) + "\n")
    return out


def write_chart(figures: list[Figure]) -> Path:
    """results/latest.png: one bar per throughput ratio, its target marked, coloured by
    whether it was met."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [f for f in figures if f.unit in THROUGHPUT_UNITS and f.ratio is not None]
    ratios = [f.ratio for f in shown if f.ratio is not None]  # all of them: for mypy
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(shown) + 1.6))
    labels = [f"{f.name}\nvs {f.reference_name}" for f in shown]
    colours = [{True: "#2e7d32", False: "#c62828", None: "#607d8b"}[f.met] for f in shown]
    y = range(len(shown))
    ax.barh(y, ratios, color=colours)
    for i, (f, ratio) in enumerate(zip(shown, ratios, strict=True)):
        ax.text(ratio, i, f" {ratio:.2f}", va="center", fontsize=8)
        if f.target is not None:
            ax.plot([float(f.target.split()[1])] * 2, [i - 0.4, i + 0.4], color="black", lw=2)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(list(y), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("arkfs / reference (higher is better; black tick: target)")
    ax.set_title("arkfs throughput against references (green: target met, red: missed)")
    fig.tight_layout()
    out = RESULTS / "latest.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def print_table(figures: list[Figure]) -> None:
    """The figures as an aligned table on stdout."""
    print(f"{'figure':<58}{'arkfs':>10}{'reference':>11}{'ratio':>8}  {'target':<7} result")
    for f in figures:
        print(
            f"{f.name[:57]:<58}{_number(f.arkfs):>10}{_number(f.reference):>11}"
            f"{_number(f.ratio):>8}  {f.target or '—':<7} {_result(f).replace('*', '')}"
            f"  ({f.unit}{'; vs ' + f.reference_name if f.reference_name else ''})"
        )
        if f.error:
            print(f"    error: {f.error}")
