"""Do whole PyTorch steps on an H100 take the time roofline predicts? Run on demand (not a test):

    .venv/bin/python benchmarks/bench_gpu_live.py [--markdown]

Needs torch (``pip install -e ".[torch]"``); no GPU: it reads what benchmarks/gpu_measure.py
timed on a lent H100 SXM5 (benchmarks/data/h100_live_steps.json, and README there). Each step is
tools/torch_flops.py's module as gpu_measure.py ran it (batch, seq or image side, fp32 with TF32
off or the module cast to bf16; a forward under no_grad, or forward, backward from an all-ones
output gradient and a plain SGD update), captured here with ``roofline.torch.capture`` (mode,
optimizer, attention "naive": the matmuls and softmax the module runs) and predicted on two
entries: ``h100-sxm5-80gb`` (the datasheet entry: the fitted GPU GEMM model and the published op
constants) and the entry ``roofline probe --quick --save`` wrote on that machine
(data/h100_live_probe.yaml: its measured peaks, bandwidth, shortest GEMM call and launch).
Printed per step: the measured best (two runs), each prediction and measured / predicted, and
the predicted share of the step in GEMMs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _tables import table_lines

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
sys.path.insert(0, str(ROOT / "tools"))


def inputs(torch: Any, builder: str, batch: int, side: int | None, dtype: Any) -> tuple:
    """gpu_measure.step_inputs on the CPU (only shapes and dtypes matter to the capture)."""
    if builder == "mlp":
        return (torch.zeros(batch, 1024, dtype=dtype),)
    if builder == "resnet50":
        return (torch.zeros(batch, 3, side, side, dtype=dtype),)
    return (torch.zeros(batch, side, dtype=torch.long),)


def predicted(step: dict[str, Any], entries: dict[str, Any]) -> dict[str, Any]:
    """The step's predicted time and GEMM time on each entry."""
    import torch
    import torch_flops

    from roofline.torch import capture

    dtype = torch.float32 if step["dtype"] == "fp32" else torch.bfloat16
    with torch.device("meta"):
        module = torch_flops.BUILDERS[step["builder"]]().to(dtype)
    module.train(step["mode"] == "train")
    args = inputs(torch, step["builder"], step["batch"], step["side"], dtype)
    network = capture(module, *(a.to("meta") for a in args), mode=step["mode"],
                      optimizer=step["optimizer"], attention="naive", name=step["step"])
    from roofline.analysis.report import analyze

    out = {}
    for label, hw in entries.items():
        totals = analyze(network, hw).totals
        out[label] = (totals["predicted_time_s"], totals["predicted_gemm_time_s"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    from roofline.hardware.catalog import load_hardware

    entries = {"datasheet": load_hardware("h100-sxm5-80gb"),
               "probed": load_hardware(str(DATA / "h100_live_probe.yaml"))}
    steps = json.loads((DATA / "h100_live_steps.json").read_text())
    header = ["step", "dtype", "batch", "measured", "fitted", "ratio", "GEMM share",
              "probed", "ratio"]
    body = []
    for step in steps:
        p = predicted(step, entries)
        (fit, fit_gemm), (probe, _) = p["datasheet"], p["probed"]
        shape = f"{step['batch']}" + (f" x {step['side']}" if step["side"] else "")
        body.append([step["step"], step["dtype"], shape, f"{step['best_s'] * 1e3:.2f} ms",
                     f"{fit * 1e3:.2f} ms", f"{step['best_s'] / fit:.2f}",
                     f"{fit_gemm / fit:.0%}", f"{probe * 1e3:.2f} ms",
                     f"{step['best_s'] / probe:.2f}"])
    print("whole eager steps on a lent H100 SXM5 (torch 2.11.0+cu130; data/h100_live_steps.json):"
          " measured best of two runs / predicted")
    print("\n".join(table_lines(header, body, args.markdown)))


if __name__ == "__main__":
    main()
