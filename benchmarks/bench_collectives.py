"""How well do roofline's collective times hold on real GPUs? Run on demand (not a test):

    .venv/bin/python benchmarks/bench_collectives.py [--markdown]

Reads benchmarks/data/xla_collectives.csv (XLA's default collective performance table for an
8-GPU H100 board: all-reduce, all-gather, reduce-scatter and all-to-all of f32 buffers from
1 KiB to 2 GiB over groups of 2, 4 and 8 GPUs, the groups of a size running side by side; see
benchmarks/data/README.md) and holds each measured time against ``analysis.collectives``'s ring
time on the row's link (links.yaml: ``nvswitch-h100``, 450 GB/s per direction per GPU, NCCL's
3.4 us a step). Per collective and group size: the share within 1.25x and 2x (either way),
measured / predicted by buffer size (up to 1 MiB, 1-64 MiB, 256 MiB and more, medians) and the
bus bandwidth the largest buffers reached (NCCL's convention: all-reduce 2 (p - 1) / p of the
buffer over the time, the others (p - 1) / p). Nothing here is fitted: it checks the stated
model (the link's datasheet rate, NCCL's latency) against public measurements.

A second table holds the same rows against NCCL's own cost model (``_nccl_model``: base
latency, per-step latency and bandwidth share of each protocol, LL / LL128 / Simple, the least
predicted time, every constant from NCCL's ``src/graph/tuning.cc``), with the protocol it
picks by buffer size; NCCL's tuner has no model of an all-to-all (grouped send/recv), so those
rows keep the ring formula in both tables. ``plan`` keeps the first model (README).
"""

from __future__ import annotations

import argparse
import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from _nccl_model import ring as nccl_ring
from _tables import table_lines

from roofline.analysis.collectives import ring_time_s
from roofline.hardware.links import links

DATA = Path(__file__).parent / "data" / "xla_collectives.csv"
SMALL, LARGE = 2**20, 256 * 2**20  # up to 1 MiB; 256 MiB and more


@dataclass(frozen=True)
class Row:
    link: str
    collective: str
    p: int
    groups: int
    nbytes: int
    time_s: float


def load_rows(path: Path = DATA) -> list[Row]:
    with open(path, newline="") as f:
        return [Row(r["link"], r["collective"], int(r["group_size"]), int(r["groups"]),
                    int(r["bytes"]), float(r["time_us"]) * 1e-6) for r in csv.DictReader(f)]


MODELS = ("ring", "nccl")


def predicted_s(row: Row, model: str = "ring") -> float:
    """The ring time ``analysis.collectives`` gives for the row's collective on its link, or
    with ``model="nccl"`` NCCL's own estimate (an all-to-all's: the ring's, module docstring)."""
    link = links()[row.link]
    if model == "nccl" and row.collective != "all-to-all":
        return nccl_ring(row.collective, row.nbytes, row.p, link).time_s
    return ring_time_s(row.collective, row.nbytes, row.p, link.bandwidth_gbs, link.latency_us)


def protocols(rows: list[Row]) -> str:
    """The protocols NCCL's model picks over ``rows``, smallest buffer first: ``LL to 2 MiB,
    LL128 to 32 MiB, Simple``."""
    out: list[tuple[str, int]] = []
    for r in sorted(rows, key=lambda r: r.nbytes):
        protocol = nccl_ring(r.collective, r.nbytes, r.p, links()[r.link]).protocol
        if out and out[-1][0] == protocol:
            out[-1] = (protocol, r.nbytes)
        else:
            out.append((protocol, r.nbytes))
    return ", ".join(f"{name} to {_size(last)}" for name, last in out[:-1]) + \
        ("" if not out else (", " if len(out) > 1 else "") + out[-1][0])


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def bus_gbs(row: Row) -> float:
    """NCCL's bus bandwidth of a measured row: the bytes each GPU moves over the time."""
    steps = 2 * (row.p - 1) if row.collective == "all-reduce" else row.p - 1
    return steps / row.p * row.nbytes / row.time_s / 1e9


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def table(rows: list[Row], markdown: bool = False, model: str = "ring") -> list[str]:
    """Measured / predicted by collective and group, ``model`` "ring" or "nccl" (which adds the
    protocols NCCL's model picks)."""
    header = ["collective", "GPUs", "groups", "n", "within 1.25x / 2x", "<= 1 MiB",
              "1-64 MiB", ">= 256 MiB", "bus GB/s, largest"]
    if model == "nccl":
        header.append("protocol (NCCL's model)")
    body = []
    keys = sorted({(r.collective, r.p, r.groups) for r in rows})
    for collective, p, groups in keys:
        rs = [r for r in rows if (r.collective, r.p, r.groups) == (collective, p, groups)]
        ratio = {r: r.time_s / predicted_s(r, model) for r in rs}
        both = [max(x, 1 / x) for x in ratio.values()]
        largest = max(rs, key=lambda r: r.nbytes)
        body.append([collective, str(p), str(groups), str(len(rs)),
                     f"{sum(b <= 1.25 for b in both) / len(both):.0%} / "
                     f"{sum(b <= 2 for b in both) / len(both):.0%}",
                     _median([x for r, x in ratio.items() if r.nbytes <= SMALL]),
                     _median([x for r, x in ratio.items() if SMALL < r.nbytes < 64 * 2**20]),
                     _median([x for r, x in ratio.items() if r.nbytes >= LARGE]),
                     f"{bus_gbs(largest):.0f}"]
                    + ([protocols(rs) if collective != "all-to-all" else "- (ring formula)"]
                       if model == "nccl" else []))
    every = [r.time_s / predicted_s(r, model) for r in rows]
    both = [max(x, 1 / x) for x in every]
    body.append(["all", "", "", str(len(rows)),
                 f"{sum(b <= 1.25 for b in both) / len(both):.0%} / "
                 f"{sum(b <= 2 for b in both) / len(both):.0%}", "", "", "", ""]
                + ([""] if model == "nccl" else []))
    return table_lines(header, body, markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = load_rows()
    link = links()[rows[0].link]
    print(f"measured / predicted (ring on {link.name}: {link.bandwidth_gbs:g} GB/s per "
          f"direction, {link.latency_us:g} us a step), medians by buffer size")
    print("\n".join(table(rows, args.markdown)))
    print(f"\nmeasured / predicted by NCCL's own model (ring; base latency + steps x "
          f"per-step latency + bytes at the protocol's share of {link.bandwidth_gbs:g} GB/s, "
          f"least over LL, LL128, Simple)")
    print("\n".join(table(rows, args.markdown, "nccl")))


if __name__ == "__main__":
    main()
