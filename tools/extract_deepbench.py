"""Copy the dense GEMM timings (the measured facts, no code) out of DeepBench's published
result workbooks into benchmarks/data/deepbench_gemm.csv.

DeepBench (https://github.com/baidu-research/DeepBench, Apache-2.0) publishes one .xlsx per
device under results/train/; each "Results" sheet starts with a "Dense Matrix Multiplication"
table (M, N, K, A / B transpose, time in ms, TFLOP/s). This script reads those tables and
nothing else. It needs openpyxl, which is not a dependency of roofline: install it into a
scratch environment for the one-off extraction.

HELD OUT: DeepBench's V100 workbook is never read (it validates the GPU model; see
benchmarks/data/README.md). The script refuses any file whose name mentions V100.

    python tools/extract_deepbench.py DEEPBENCH_CHECKOUT > benchmarks/data/deepbench_gemm.csv

where DEEPBENCH_CHECKOUT holds results/train/*.xlsx (a clone, or files written with
``git show COMMIT:results/train/NAME.xlsx``).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

# workbook -> (device: the hwdb entry name, {sheet: (A/B dtype, math)})
WORKBOOKS = {
    "results/train/DeepBench_NV_P100.xlsx": ("p100-pcie-16gb", {
        "Results FP32": ("fp32", "fp32"),
        # "16 bit inputs, 32 bit multiplication, 32 bit addition": fp16 storage, fp32 math
        "Results - Psuedo FP16": ("fp16", "fp32")}),
    "results/train/DeepBench_NV_1080Ti.xlsx": ("gtx-1080-ti", {
        "Results - FP32": ("fp32", "fp32")}),
    "results/train/DeepBench_NV_TitanXp.xlsx": ("titan-xp", {"FP32": ("fp32", "fp32")}),
    "results/train/DeepBench_NV_T4.xlsx": ("t4", {
        "Results FP32": ("fp32", "fp32"),
        # "16 bit inputs, 16 bit multiplication, 32 bit addition": Tensor Cores, fp32 accumulate
        "Results - FP16 ip, Mixed math": ("fp16", "fp16-tc")}),
    # Maxwell (CUDA 7.5.18) and the Pascal TITAN X (CUDA 8): FP32 only
    "results/train/DeepBench_NV_M40.xlsx": ("m40-24gb", {"Results - FP32": ("fp32", "fp32")}),
    "results/train/DeepBench_NV_TitanX.xlsx": ("gtx-titan-x", {
        "Results - FP32": ("fp32", "fp32")}),
    "results/train/DeepBench_NV_TitanX_Pascal.xlsx": ("titan-x-pascal", {
        "Results - FP32": ("fp32", "fp32")}),
}
HEADER = ("device", "dtype", "math", "m", "n", "k", "a_t", "b_t", "time_ms")


def gemm_rows(sheet) -> list[tuple]:
    """(M, N, K, A^T, B^T, ms) rows of the sheet's 'Dense Matrix Multiplication' table."""
    rows, inside = [], False
    for row in sheet.iter_rows(values_only=True):
        cells = [c for c in row if c is not None]
        if any(c == "Dense Matrix Multiplication" for c in cells):
            inside = True
            continue
        if not inside:
            continue
        if not cells:  # blank rows sit between the table's groups
            continue
        # an application name ("DeepSpeech") may lead a row and a note may sit in it
        numbers = [c for c in cells if not isinstance(c, str) or c in ("N", "T")]
        if len(numbers) < 6 or not all(isinstance(c, int) for c in numbers[:3]):
            break  # the next section ("Convolution")
        m, n, k, a_t, b_t, ms = numbers[:6]
        rows.append((m, n, k, a_t, b_t, float(ms)))
    return rows


def main(root: str) -> None:
    import openpyxl

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(HEADER)
    for name, (device, sheets) in WORKBOOKS.items():
        if "v100" in name.lower():
            raise SystemExit("V100 results are held out")
        book = openpyxl.load_workbook(Path(root) / name, data_only=True, read_only=True)
        for sheet_name, (dtype, math) in sheets.items():
            for m, n, k, a_t, b_t, ms in gemm_rows(book[sheet_name]):
                out.writerow((device, dtype, math, m, n, k, a_t, b_t, f"{ms:g}"))


if __name__ == "__main__":
    main(sys.argv[1])
