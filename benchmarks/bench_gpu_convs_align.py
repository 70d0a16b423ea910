"""Do convolutions of few input channels, and grouped ones, take the time roofline predicts on an
H100? On demand (no test):

    .venv/bin/python benchmarks/bench_gpu_convs_align.py [--markdown]

Needs torch (``pip install -e ".[torch]"``); no GPU: it reads what ``gpu_convs_align.py`` timed
on a lent H100 SXM5 (2026-11-28, torch 2.11.0+cu130, cuDNN 9.19:
benchmarks/data/h100_live_convs_align.csv). Each layer, fp32 (TF32) and bf16, NCDHW and
channels_last_3d (NCHW and channels_last in 2-D, the layout column's ncdhw and ndhwc there
too), forward and backward: its kernels' profiled
time (cuDNN's layout transposes among them) against the GEMM time ``roofline.torch.capture``
predicts for the lone layer on the datasheet entry (``h100-sxm5-80gb``; past the stem, behind a
trainable scale so that its input's gradient is counted as the measurement took it), and the
rate of its main kernels (the FLOPs over the time less the transposes). Then what padding a stem
of 3 input channels to the 16-byte rule's 4 (TF32) or 8 (bf16) did to its measured time, and
what the prediction says it does.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from _conv_rows import ENTRY, predicted, started
from _tables import table_lines

DATA = Path(__file__).resolve().parent / "data"


def _layer(row: dict[str, str]) -> str:
    return (f"{row['op']} {row['c']} > {row['k']}, {row['kernel']}"
            + (f" / g{row['groups']}" if row["groups"] != "1" else ""))


def layer_lines(rows: list[dict[str, str]], hw: Any, markdown: bool) -> list[str]:
    header = ["set", "layer", "dtype", "layout", "pass", "kernels", "transposes",
              "predicted", "of which transposes", "measured / predicted", "main kernels"]
    body = []
    for row in rows:
        seconds, flops, moved_p = predicted(row, hw)
        measured, moved = float(row["kernel_us"]) * 1e-6, float(row["transpose_us"]) * 1e-6
        body.append([row["set"], _layer(row), row["dtype"], row["layout"], row["mode"],
                     f"{measured * 1e6:.0f} us", f"{moved * 1e6:.0f} us",
                     f"{seconds * 1e6:.0f} us", f"{moved_p * 1e6:.0f} us",
                     f"{measured / seconds:.2f}",
                     f"{flops / (measured - moved) / 1e12:.1f} TFLOP/s"])
    return table_lines(header, body, markdown)


def grouped_lines(rows: list[dict[str, str]], hw: Any, markdown: bool) -> list[str]:
    """The grouped (not depthwise) 3-D convolutions on NCDHW maps: cuDNN's transposes against
    the ones a capture counts (``capture_convs._transposed``), and the whole row's measured /
    predicted before (0.9.0's first rule: none for a grouped convolution, the prediction less
    those) and after."""
    header = ["layer", "dtype", "pass", "transposes", "predicted", "measured / predicted",
              "before", "after"]
    body = []
    for row in rows:
        if row["set"] not in ("grouped", "grouped4") or row["layout"] != "ncdhw":
            continue
        seconds, _, moved_p = predicted(row, hw)
        measured, moved = float(row["kernel_us"]) * 1e-6, float(row["transpose_us"]) * 1e-6
        body.append([_layer(row), row["dtype"], row["mode"], f"{moved * 1e6:.0f} us",
                     f"{moved_p * 1e6:.0f} us",
                     f"{moved / moved_p:.2f}" if moved_p else "-",
                     f"{measured / (seconds - moved_p):.2f}", f"{measured / seconds:.2f}"])
    return table_lines(header, body, markdown)


def padding_lines(rows: list[dict[str, str]], hw: Any, markdown: bool) -> list[str]:
    """Each stem's forward plus backward, 3 input channels against the 16-byte rule's 4 (fp32,
    TF32) or 8 (bf16), measured and predicted."""
    sums: dict[tuple[str, ...], list[float]] = {}
    for row in rows:
        if row["set"] != "align" or int(row["c"]) > 8:
            continue
        key = (row["op"], row["dtype"], row["layout"], row["c"])
        both = sums.setdefault(key, [0.0, 0.0])
        both[0] += float(row["kernel_us"]) * 1e-6
        both[1] += predicted(row, hw)[0]
    header = ["stem", "dtype", "layout", "3 channels", "padded", "measured: padded / 3",
              "predicted: padded / 3"]
    body = []
    for (op, dtype, layout, c), (three, three_p) in sorted(sums.items()):
        if c != "3":
            continue
        padded, padded_p = sums[(op, dtype, layout, "4" if dtype == "fp32" else "8")]
        body.append([op, dtype, layout, f"{three * 1e6:.0f} us",
                     f"{padded * 1e6:.0f} us ({4 if dtype == 'fp32' else 8})",
                     f"{padded / three:.2f}", f"{padded_p / three_p:.2f}"])
    return table_lines(header, body, markdown)


def main() -> int:
    start = started(__doc__ or "")
    if start is None:
        return 2
    markdown, hw = start
    with open(DATA / "h100_live_convs_align.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if not r.get("error")]
    print(f"Convolutions on a lent H100 SXM5 (data/h100_live_convs_align.csv): kernels' profiled "
          f"time against the lone layer's predicted GEMM time on {ENTRY}")
    print("\n".join(layer_lines(rows, hw, markdown)))
    print()
    print("Grouped Conv3d on NCDHW maps: cuDNN's layout transposes against the capture's "
          "(capture_convs._transposed), and the kernels' measured / predicted before and after "
          "a capture counted them")
    print("\n".join(grouped_lines(rows, hw, markdown)))
    print()
    print("A stem padded to the 16-byte rule (forward plus backward)")
    print("\n".join(padding_lines(rows, hw, markdown)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
