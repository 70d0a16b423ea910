"""Copy the measured collective throughputs (the facts, no code) out of XLA's default collective
performance table into benchmarks/data/xla_collectives.csv.

XLA (https://github.com/openxla/xla, Apache-2.0) ships
``xla/service/gpu/model/default_collective_perf_table.txtpb``: per device, for all-reduce,
all-gather, reduce-scatter, all-to-all and collective-permute over iota replica groups (G
groups of p devices, G p = 8 here), f32 buffers from a few hundred bytes to 2 GiB, the
``network_throughput_bytes_per_sec`` that ``xla/tools/collective_perf_table_gen`` measured:
the whole buffer's bytes (its ``tensor_size_bytes``: the all-reduce's, all-gather's output,
reduce-scatter's input, all-to-all's) over the median of 20 runs' compute time. This script
reads the entries of the devices in ``DEVICES`` and writes one row per (collective, group,
size) with the time that throughput stands for.

    python tools/extract_xla_collectives.py TABLE.txtpb > benchmarks/data/xla_collectives.csv

(the file as ``git show COMMIT:xla/service/gpu/model/default_collective_perf_table.txtpb``
writes it; benchmarks/data/xla_collectives.csv was made from openxla/xla commit
ad6eaee1b2f13931e3ceb26dc50bf3ac6b425496, 2026-07-10, whose sm_90 entries are unchanged at
dc660322168302831d1cbc4c99683cd79671286e). The proto's shape is the instruction's output, so
a reduce-scatter's buffer is its output's elements times p.
"""

from __future__ import annotations

import re
import sys

from xla_tables import device_sections, write_rows

#: XLA's device key -> (the hwdb entry, the links.yaml link its group runs on): sm_90's groups
#: span 8 devices, one HGX H100 board (8 SXM GPUs on NVSwitch)
DEVICES = {"sm_90": ("h100-sxm5-80gb", "nvswitch-h100")}
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
ELEMENT_BYTES = {"F32": 4, "BF16": 2, "F16": 2}
HEADER = ("device", "link", "collective", "dtype", "group_size", "groups", "bytes", "time_us")
_ENTRY_START = "\n    entries {\n"  # one measured instruction of a device's list
_OPCODE = re.compile(r'opcode: "([^"]+)"')
_SHAPE = re.compile(r"shape \{\s*element_type: (\w+)\s*((?:dimensions: \d+\s*)+)")
_GROUPS = re.compile(r"num_replica_groups: (\d+)\s*num_devices_per_group: (\d+)")
_RATE = re.compile(r"network_throughput_bytes_per_sec: (\d+)")


def entry_row(device: str, link: str, text: str) -> tuple | None:
    """One entry's row, or None for a collective not in ``KINDS`` (collective-permute: its
    pairs are not iota groups)."""
    opcode = _OPCODE.search(text)
    if opcode is None or opcode.group(1) not in KINDS:
        return None
    op = opcode.group(1)
    shape, groups, rate = _SHAPE.search(text), _GROUPS.search(text), _RATE.search(text)
    if shape is None or groups is None or rate is None:
        raise ValueError(f"a {op} entry without its shape, iota groups or throughput")
    elements = 1
    for dim in re.findall(r"\d+", shape.group(2)):
        elements *= int(dim)
    p = int(groups.group(2))
    nbytes = elements * ELEMENT_BYTES[shape.group(1)] * (p if op == "reduce-scatter" else 1)
    return (device, link, op, shape.group(1).lower(), p, int(groups.group(1)), nbytes,
            f"{nbytes / int(rate.group(1)) * 1e6:.6g}")


def rows(text: str) -> list[tuple]:
    """(device, link, collective, dtype, p, G, buffer bytes, time_us) of every entry of
    ``DEVICES`` whose collective is one of ``KINDS``, entry by entry."""
    out = []
    for key, section in device_sections(text, DEVICES):
        device, link = DEVICES[key]
        for entry in section.split(_ENTRY_START)[1:]:
            row = entry_row(device, link, entry)
            if row is not None:
                out.append(row)
    return out


def main(path: str) -> None:
    write_rows(path, rows, DEVICES, HEADER, lambda r: (r[0], r[2], r[4], r[6]))


if __name__ == "__main__":
    main(sys.argv[1])
