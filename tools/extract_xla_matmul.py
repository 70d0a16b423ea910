"""Copy the measured GEMM rates (the facts, no code) out of XLA's default matmul performance
table into benchmarks/data/xla_matmul.csv.

XLA (https://github.com/openxla/xla, Apache-2.0) ships
``xla/service/gpu/model/default_matmul_perf_table.txtpb``: per device, for every batched dot
of a grid (b in 1, 2, 4; m, n, k in 256 .. 4096, powers of two), the FLOP/s that
``xla/tools/matmul_perf_table_gen`` measured, 2 b m n k over the median of 5 traced kernel
times (CUPTI, after a warm-up run), per dtype key ``lhs x rhs -> out``. This script reads the
entries of the devices in ``DEVICES`` and writes one row per (device, dtype, b, m, n, k) with
the kernel time those FLOP/s stand for.

    python tools/extract_xla_matmul.py TABLE.txtpb > benchmarks/data/xla_matmul.csv

(the file as ``git show COMMIT:xla/service/gpu/model/default_matmul_perf_table.txtpb`` writes
it; benchmarks/data/xla_matmul.csv was made from openxla/xla commit
ad6eaee1b2f13931e3ceb26dc50bf3ac6b425496, 2026-07-10, whose sm_90 and sm_100_B200 entries are
unchanged at dc660322168302831d1cbc4c99683cd79671286e, 2026-08-19). The text format is read
with regular expressions: the table is flat (``entries { key value { entries { b m n k
flops { key value } ... } } }``).
"""

from __future__ import annotations

import re
import sys

from xla_tables import device_sections, write_rows

#: XLA's device key -> (the hwdb entry, {XLA dtype key: (our dtype, math)}). sm_90 is H100 SXM:
#: its bf16 4096^3 rate, 783 TFLOP/s, is above H100 PCIe's 756 dense peak. XLA runs an f32 dot
#: on Hopper's Tensor Cores as TF32 by default (401 TFLOP/s at 4096^3, six times the 67 TFLOP/s
#: of its CUDA cores), so f32 rows are tf32 math on 4-byte operands. sm_100_B200 is the B200 the
#: key names (the HGX B200 entry; the table names no other Blackwell part): its f32 dots run as
#: TF32 too (758 TFLOP/s at 4096^3, ten times the 75 TFLOP/s of its CUDA cores, below the 1,100
#: dense TF32 peak). B200's fp8 dots (``f8e4m3fnxf8e4m3fn->bf16``: e4m3 operands, bf16 out, as
#: the model's fp8 GEMM writes bf16) are copied too, checked and never fitted like every B200
#: row: 3,280 TFLOP/s at 4 x 4096^3, below the 4,500 dense fp8 peak. sm_90's fp8 rows are not:
#: they reach 2,593 TFLOP/s at 4 x 4096^3, above H100's 1,979 dense fp8 peak, so they are not
#: the dense fp8 GEMMs the model predicts.
_BF16_TF32 = {"bf16xbf16->bf16": ("bf16", "bf16-tc"), "f32xf32->f32": ("tf32", "tf32-tc")}
DEVICES = {"sm_90": ("h100-sxm5-80gb", _BF16_TF32),
           "sm_100_B200": ("b200-sxm-180gb",
                           _BF16_TF32 | {"f8e4m3fnxf8e4m3fn->bf16": ("fp8", "fp8-tc")})}
HEADER = ("device", "dtype", "math", "b", "m", "n", "k", "time_ms")
_ENTRY = re.compile(r"entries \{\s*b: (\d+)\s*m: (\d+)\s*n: (\d+)\s*k: (\d+)\s*((?:flops \{[^}]*\}"
                    r"\s*)+)\}")
_FLOPS = re.compile(r'flops \{ key: "([^"]+)" value: (\d+) \}')


def rows(text: str) -> list[tuple]:
    """(device, dtype, math, b, m, n, k, time_ms) of every entry of ``DEVICES``."""
    out = []
    for key, section in device_sections(text, DEVICES):
        device, dtypes = DEVICES[key]
        for entry in _ENTRY.finditer(section):
            b, m, n, k = (int(x) for x in entry.group(1, 2, 3, 4))
            for dtype_key, value in _FLOPS.findall(entry.group(5)):
                if dtype_key in dtypes:
                    dtype, math = dtypes[dtype_key]
                    time_ms = 2 * b * m * n * k / int(value) * 1e3
                    out.append((device, dtype, math, b, m, n, k, f"{time_ms:.6g}"))
    return out


def main(path: str) -> None:
    write_rows(path, rows, DEVICES, HEADER, lambda r: (r[0], r[1], r[3], r[4], r[5], r[6]))


if __name__ == "__main__":
    main(sys.argv[1])
