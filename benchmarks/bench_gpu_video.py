"""Do 3-D convolutions on an H100 take the time roofline predicts for them? On demand (no test):

    .venv/bin/python benchmarks/bench_gpu_video.py [--markdown]

Needs torch (``pip install -e ".[torch]"``); no GPU: it reads what ``benchmarks/gpu_measure.py
--parts video`` timed on a lent H100 SXM5 (2026-11-28, torch 2.11.0+cu130, cuDNN 9.19:
benchmarks/data/h100_live_convs3d.csv, h100_live_video_steps.json, h100_live_video_env.json).

First each 3-D convolution (R3D-18's, at batch 8 on 16 x 112 x 112 clips, and 3-D U-Net's two
up-convolutions; _video.py), fp32 (torch's default TF32 convolutions) and bf16, NCDHW and
channels_last_3d, forward and backward: its kernels' profiled time against the GEMM time
``roofline.torch.capture`` predicts for the lone layer on the datasheet entry
(``h100-sxm5-80gb``). The backward is the training capture's GEMMs less the forward's; a layer
past the stem is captured behind a trainable scale so that its input's gradient is counted as the
measurement took it. Then cuDNN's layout transposes among the kernels, and R3D-18's whole steps
(forward under no_grad, and training with SGD) against its capture.
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

from _conv_rows import ENTRY, predicted, started
from _tables import table_lines
from _video import clip, r3d18

DATA = Path(__file__).resolve().parent / "data"
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


def mislaid(row: dict[str, str]) -> bool:
    """A row the harness measured with a weight left channels last (before its fix: one module
    served every dtype and layout, fp32 NCDHW, fp32 channels_last_3d, then bf16, and a module's
    ``to(memory_format=...)`` moves its own weight): bf16 NCDHW, one layer at a time. torch ran
    those channels last (a copy of the input, no cuDNN transposes), as no user's NCDHW module
    runs; the whole steps built their module afresh."""
    return row["dtype"] == "bf16" and row["layout"] == "ncdhw"


def conv_lines(rows: list[dict[str, str]], hw: Any, markdown: bool) -> tuple[list[str], dict]:
    header = ["layer (N x C > K, frames x side, kernel / stride)", "dtype", "layout", "pass",
              "kernels", "of which transposes", "predicted", "measured / predicted"]
    body, ratios = [], {}
    for row in rows:
        if row.get("error") or mislaid(row):
            continue
        fit = predicted(row, hw)[0]
        measured = float(row["kernel_us"]) * 1e-6
        ratio = measured / fit
        ratios.setdefault((row["dtype"], row["layout"]), []).append(ratio)
        name = "up-conv" if row["op"] != "conv3d" else "conv"
        body.append([f"{name} {row['n']} x {row['c']} > {row['k']}, {row['frames']} x "
                     f"{row['side']}^2, {row['kernel']} / {row['stride']}", row["dtype"],
                     row["layout"], row["mode"], f"{measured * 1e6:.0f} us",
                     f"{float(row['transpose_us']):.0f} us", f"{fit * 1e6:.0f} us",
                     f"{ratio:.2f}"])
    return table_lines(header, body, markdown), ratios


def summary_lines(ratios: dict[tuple[str, str], list[float]], markdown: bool) -> list[str]:
    body = []
    for (dtype, layout), values in ratios.items():
        body.append([dtype, layout, str(len(values)),
                     f"{sum(0.8 <= r <= 1.25 for r in values) / len(values):.0%}",
                     f"{sum(0.5 <= r <= 2 for r in values) / len(values):.0%}",
                     f"{statistics.median(values):.2f}", f"{min(values):.2f}-{max(values):.2f}"])
    return table_lines(["dtype", "layout", "rows", "within 1.25x", "within 2x", "median",
                        "range"], body, markdown)


def transpose_lines(rows: list[dict[str, str]], hw: Any, markdown: bool) -> list[str]:
    """cuDNN's layout transposes over R3D-18's convolutions summed by count, per dtype, layout
    and pass: their profiled time, their share of the kernels, and what the capture's rule
    (``capture_convs._transposed``, priced by ``gpu_layout.transpose_s``) predicts for them."""
    from roofline.analysis.gpu_layout import transpose_s
    from roofline.model.gemm import Gemm

    body = []
    for dtype in DTYPES:
        for layout in ("ncdhw", "ndhwc"):
            for mode in ("forward", "backward"):
                picked = [r for r in rows if r["dtype"] == dtype and r["layout"] == layout
                          and r["mode"] == mode and r["op"] == "conv3d"
                          and r.get("set", "r3d18") == "r3d18" and not r.get("error")
                          and not mislaid(r)]
                if not picked:
                    continue
                total = sum(float(r["kernel_us"]) * int(r["count"]) for r in picked) * 1e-6
                moved = sum(float(r["transpose_us"]) * int(r["count"]) for r in picked) * 1e-6
                predicted = sum(int(r["count"]) * transpose_s(
                    Gemm("MM1", "conv", "forward", 1, 1, 1,
                         "tf32" if dtype == "fp32" else dtype, transposed=values), hw)
                    for r in picked for values in _transposed(r))
                body.append([dtype, layout, mode, f"{total * 1e3:.2f} ms",
                             f"{moved * 1e3:.2f} ms", f"{moved / total:.0%}",
                             f"{predicted * 1e3:.2f} ms",
                             f"{moved / predicted:.2f}" if predicted else "-"])
    return table_lines(["dtype", "layout", "pass", "kernels", "in transposes", "share",
                        "predicted", "measured / predicted"], body, markdown)


def _transposed(row: dict[str, str]) -> list[int]:
    """The values the capture's rule transposes around the row's GEMMs (NCDHW): X, W and Y in
    each pass, W not for a 1 x 1 x 1 filter, none for a 1 x 1 x 1 stride-1 one; the stem's
    backward its weight gradient's alone."""
    if row["layout"] != "ncdhw":
        return []
    n, c, k, d, s = (int(row[x]) for x in ("n", "c", "k", "frames", "side"))
    kernel = [int(v) for v in row["kernel"].split("x")]
    stride = [int(v) for v in row["stride"].split("x")]
    pad = [int(v) for v in row["pad"].split("x")]
    out = [(size + 2 * p - r) // st + 1 for size, p, r, st in zip((d, s, s), pad, kernel, stride)]
    taps = kernel[0] * kernel[1] * kernel[2]
    if taps == 1 and stride == [1, 1, 1]:
        return []
    x, y = n * c * d * s * s, n * k * out[0] * out[1] * out[2]
    w = k * c * taps if taps > 1 else 0
    passes = 1 if row["mode"] == "forward" else (1 if c == 3 else 2)
    return [x + w + y] * passes


def step_lines(hw: Any, markdown: bool) -> list[str]:
    """R3D-18's whole steps against the capture of the same step."""
    import torch

    from roofline.analysis.gpu_layout import transpose_s
    from roofline.analysis.report import analyze
    from roofline.model.repeats import float_total
    from roofline.torch import capture

    body = []
    for step in json.loads((DATA / "h100_live_video_steps.json").read_text()):
        if "error" in step:
            continue
        dt = getattr(torch, DTYPES[step["dtype"]])
        with torch.device("meta"):
            module = r3d18().to(dt)
            x = clip(torch, step["batch"], dt, "meta", step["frames"], step["side"])
        if step["layout"] == "ndhwc":
            module = module.to(memory_format=torch.channels_last_3d)
            x = x.contiguous(memory_format=torch.channels_last_3d)
        network = capture(module, x, mode=step["mode"], optimizer=step["optimizer"],
                          name=step["step"])
        report = analyze(network, hw)
        totals = report.totals
        fit = totals["predicted_time_s"]
        moved = sum(k["s"] for name, k in step["kernels"].items()
                    if "nchwToNhwc" in name or "nhwcToNchw" in name)
        body.append([step["step"], step["dtype"], step["layout"],
                     f"{step['kernel_s'] * 1e3:.2f} ms", f"{step['best_s'] * 1e3:.2f} ms",
                     f"{fit * 1e3:.2f} ms", f"{step['kernel_s'] / fit:.2f}",
                     f"{step['best_s'] / fit:.2f}",
                     f"{totals['predicted_gemm_time_s'] / fit:.0%}",
                     f"{moved * 1e3:.2f} ms",
                     f"{float_total(report.results, lambda r: transpose_s(r.gemm, hw)) * 1e3:.2f}"
                     f" ms"])
    return table_lines(["step", "dtype", "layout", "kernels", "wall clock", "predicted",
                        "kernels / predicted", "wall / predicted", "GEMM share",
                        "transposes", "predicted"], body, markdown)


def main() -> int:
    start = started(__doc__ or "")
    if start is None:
        return 2
    markdown, hw = start
    with open(DATA / "h100_live_convs3d.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    lines, ratios = conv_lines(rows, hw, markdown)
    print(f"3-D convolutions on a lent H100 SXM5 (data/h100_live_convs3d.csv): kernels' "
          f"profiled time against the lone layer's predicted GEMM time on {ENTRY}")
    print("\n".join(lines))
    print()
    print("measured / predicted by dtype and layout")
    print("\n".join(summary_lines(ratios, markdown)))
    print()
    print("cuDNN's layout transposes (nchwToNhwc / nhwcToNchw kernels) around R3D-18's "
          "convolutions, summed by count")
    print("\n".join(transpose_lines(rows, hw, markdown)))
    print()
    print(f"R3D-18's whole steps, batch 8 of 16 x 112 x 112 clips (data/"
          f"h100_live_video_steps.json), against the capture on {ENTRY}")
    print("\n".join(step_lines(hw, markdown)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
