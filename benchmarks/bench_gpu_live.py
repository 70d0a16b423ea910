"""Do whole PyTorch steps on an H100 or H200 take the time roofline predicts? On demand (no test):

    .venv/bin/python benchmarks/bench_gpu_live.py [--markdown]

Needs torch (``pip install -e ".[torch]"``); no GPU: it reads what benchmarks/gpu_measure.py
timed on a lent H100 SXM5 and H200 (benchmarks/data/h1?0_live_steps.json, and README there).
Each step is tools/torch_flops.py's module as gpu_measure.py ran it (batch, seq or image side,
fp32 with TF32 off or the module cast to bf16; a forward under no_grad, or forward, backward
from an all-ones output gradient and a plain SGD update), captured here with
``roofline.torch.capture`` (mode, optimizer, attention "naive": the matmuls and softmax the
module runs) and predicted on two entries per GPU: its datasheet entry (``h100-sxm5-80gb``,
``h200-sxm-141gb``: the fitted GPU GEMM model and the published op constants) and the entry
``roofline probe --quick --save`` wrote on that machine (data/h1?0_live_probe.yaml: its measured
peaks, bandwidth, shortest GEMM call and launch).
Printed per step: the measured best (on the H100 of two runs), each prediction and measured /
predicted, and the predicted share of the step in GEMMs. Then the non-GEMM ops of
data/h100_live_ops.csv (torch's eager calls and, forward, their CUDA-graph replays; attention
under torch's default backend) on both entries, by op and dtype: the share within 1.25x and 2x
and the median of measured / predicted. Then a Llama-2-7B decode step
(data/h100_live_decode.json) as a CUDA graph and eagerly against its predicted step. Last,
ResNet-50's steps in channels_last (data/h100_live_steps_variants.json), captured so, and at
batches 32 and 128 in both layouts on both GPUs (data/h1?0_live_resnets.json).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _tables import table_lines
from gpu_measure import step_inputs

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
sys.path.insert(0, str(ROOT / "tools"))


def predicted(step: dict[str, Any], entries: dict[str, Any],
              channels_last: bool = False) -> dict[str, Any]:
    """The step's predicted time and GEMM time on each entry (``channels_last``: the module and
    its input in that memory format, as gpu_measure.py --channels-last ran ResNet-50)."""
    import torch
    import torch_flops

    from roofline.torch import capture

    dtype = torch.float32 if step["dtype"] == "fp32" else torch.bfloat16
    with torch.device("meta"):
        module = torch_flops.BUILDERS[step["builder"]]().to(dtype)
    module.train(step["mode"] == "train")
    args = step_inputs(torch, step["builder"], step["batch"], step["side"], dtype, "meta")
    if channels_last:
        module = module.to(memory_format=torch.channels_last)
        args = tuple(x.to(memory_format=torch.channels_last) for x in args)
    network = capture(module, *args, mode=step["mode"],
                      optimizer=step["optimizer"], attention="naive", name=step["step"])
    from roofline.analysis.report import analyze

    out = {}
    for label, hw in entries.items():
        totals = analyze(network, hw).totals
        out[label] = (totals["predicted_time_s"], totals["predicted_gemm_time_s"])
    return out


#: ops.csv's elementwise ops as roofline's op kinds (model.ops.ELEMENTWISE)
OP_KINDS = {"add": "residual", "gelu": "gelu", "gelu-tanh": "gelu", "layer-norm": "layernorm",
            "softmax": "softmax"}
ITEMSIZE = {"bf16": 2, "fp32": 4}


def op_of(row: dict[str, str]) -> Any:
    """The roofline ``Op`` of one ops.csv row (attention under torch's default backend only:
    the backend a user gets), or None."""
    from roofline.model.ops import ELEMENTWISE, AttentionShape, Op

    dims = [int(d) for d in row["shape"].split("x")]
    e = ITEMSIZE[row["dtype"]]
    if row["op"] in OP_KINDS:
        flops, reads, writes = ELEMENTWISE[OP_KINDS[row["op"]]]
        n = 1
        for d in dims:
            n *= d
        return Op("OP1", "x", "forward", OP_KINDS[row["op"]], flops * n, (reads + writes) * e * n)
    if row["backend"] != "default":
        return None
    b, h, s, d = dims
    if row["op"] == "sdpa-decode":  # one query row against s keys
        return Op("OP1", "x", "forward", "flash-attention", 4 * b * h * d * s,
                  (b * 2 * h * d + b * s * 2 * h * d) * e, AttentionShape(d, 1, s, False))
    causal, forward = row["causal"] == "True", row["op"] == "sdpa"
    pairs = s * s / 2 if causal else s * s  # as model/layers/transformer.py counts them
    flops = int((4 if forward else 10) * b * h * d * pairs)
    nbytes = b * s * h * d * e * (4 if forward else 8)
    return Op("OP1", "x", "forward" if forward else "backward",
              "flash-attention" if forward else "flash-attention-backward", flops, nbytes,
              AttentionShape(d, s, s, causal))


def op_lines(entries: dict[str, Any], markdown: bool) -> list[str]:
    """Per op family and dtype: measured / predicted on each entry (eager; graph for the
    forward ops replayed in a CUDA graph, against the datasheet entry and the entry whose
    probe timed its small kernels in a CUDA graph)."""
    import csv
    import statistics

    from roofline.analysis.gpu_ops import predict_op

    groups: dict[tuple[str, str], dict[str, list[float]]] = {}
    with open(DATA / "h100_live_ops.csv", newline="") as f:
        for row in csv.DictReader(f):
            op = op_of(row) if row["time_ms"] else None
            if op is None:
                continue
            family = row["op"] + (" causal" if row["causal"] == "True" else "")
            ratios = groups.setdefault((family, row["dtype"]), {})
            for label, hw in entries.items():
                p = predict_op(op, hw, row["dtype"], hw.peak_flops_per_s(row["dtype"]),
                               hw.bandwidth_bytes_per_s).time_s
                ratios.setdefault(label, []).append(float(row["time_ms"]) * 1e-3 / p)
                if label in ("datasheet", "probed-graph") and row["graph_ms"]:
                    ratios.setdefault(f"{label} replays", []).append(
                        float(row["graph_ms"]) * 1e-3 / p)

    def cell(values: list[float] | None) -> str:
        if not values:
            return ""
        near = sum(max(v, 1 / v) <= 1.25 for v in values) / len(values)
        far = sum(max(v, 1 / v) <= 2 for v in values) / len(values)
        return (f"{near:.0%} / {far:.0%}, {statistics.median(values):.2f} "
                f"({min(values):.2f}-{max(values):.2f})")
    header = ["op", "dtype", "n", "datasheet: 1.25x / 2x, median (range)",
              "graph replays on the datasheet entry", "probed (eager) entry",
              "probed (graph) entry", "graph replays on it"]
    body = [[family, dtype, str(len(r["datasheet"])), cell(r["datasheet"]),
             cell(r.get("datasheet replays")), cell(r["probed"]), cell(r["probed-graph"]),
             cell(r.get("probed-graph replays"))] for (family, dtype), r in groups.items()]
    return table_lines(header, body, markdown)


#: (GPU, its decode steps, its datasheet entry)
DECODES = (("H100", "h100_live_decode.json", "h100-sxm5-80gb"),
           ("H200", "h200_live_decode.json", "h200-sxm-141gb"))


def captured_decode(batch: int, kv: int, entry: str) -> float:
    """The predicted time of ``_decode_step``'s step itself, captured on the meta device with
    ``roofline.torch.capture`` (every aten op it runs a kernel; bf16, as it runs) on
    ``entry``."""
    import torch
    from _decode_step import decode_step

    from roofline.torch import capture

    cfg = json.loads((ROOT / "examples" / "hf" / "llama-2-7b.json").read_text())

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = decode_step(torch, cfg, batch, kv, "meta")

        def forward(self, ids: Any) -> Any:
            return self.step()

    ids = torch.zeros(batch, 1, dtype=torch.long, device="meta")
    report = capture(Step(), ids, mode="inference", dtype="bf16", hw=entry)
    return float(report.totals["predicted_time_s"])


def decode_lines(markdown: bool) -> list[str]:
    """data/h1?0_live_decode.json: a plain PyTorch Llama-2-7B decode step (bf16) as a CUDA graph
    and eagerly, against the step examples/hf/llama-2-7b.json predicts on the GPU's datasheet
    entry (the same batch, the KV cache as long; a serving engine's kernels) and against the
    step's own code captured (``captured_decode``: its every kernel)."""
    from roofline.api import analyze_model

    header = ["GPU", "batch", "KV tokens", "kernels", "graph", "eager", "predicted",
              "graph / predicted", "captured", "graph / captured", "eager / graph"]
    body = []
    for gpu, name, entry in DECODES:
        for row in json.loads((DATA / name).read_text()):
            report = analyze_model(str(ROOT / "examples" / "hf" / "llama-2-7b.json"), entry,
                                   mode="inference", phase="decode", batch=row["batch"],
                                   seq=row["kv"], dtype="bf16")
            predicted = report.totals["predicted_time_s"]
            captured = captured_decode(row["batch"], row["kv"], entry)
            body.append([gpu, str(row["batch"]), str(row["kv"]), f"{row['kernels']:,}",
                         f"{row['graph_s'] * 1e3:.2f} ms", f"{row['eager_s'] * 1e3:.1f} ms",
                         f"{predicted * 1e3:.2f} ms", f"{row['graph_s'] / predicted:.2f}",
                         f"{captured * 1e3:.2f} ms", f"{row['graph_s'] / captured:.2f}",
                         f"{row['eager_s'] / row['graph_s']:.1f}"])
    return table_lines(header, body, markdown)


#: (GPU, its steps, its datasheet entry, the entries the probe saved there: its small kernels
#: timed from Python (calibration version 4, 2026-11-26) and in a CUDA graph (version 5,
#: 2026-11-27, a second machine of each kind))
DEVICES = (("H100", "h100_live_steps.json", "h100-sxm5-80gb",
            ("h100_live_probe.yaml", "h100_live_probe_graph.yaml")),
           ("H200", "h200_live_steps.json", "h200-sxm-141gb",
            ("h200_live_probe.yaml", "h200_live_probe_graph.yaml")))


#: the measured and predicted columns of variant_lines' and batch_lines' tables
MEASURED_COLUMNS = ["kernels", "wall clock", "predicted", "kernels / predicted",
                    "wall / predicted"]


def measured_cells(step: dict[str, Any], kernels: float, entry: Any,
                   channels_last: bool) -> list[str]:
    """A measured step's kernels and wall clock beside its capture's prediction on ``entry``
    (``MEASURED_COLUMNS``)."""
    fit = predicted(step, {"datasheet": entry}, channels_last=channels_last)["datasheet"][0]
    return [f"{kernels * 1e3:.2f} ms", f"{step['best_s'] * 1e3:.2f} ms", f"{fit * 1e3:.2f} ms",
            f"{kernels / fit:.2f}", f"{step['best_s'] / fit:.2f}"]


def variant_lines(markdown: bool) -> list[str]:
    """ResNet-50's steps in channels_last on the H100 (data/h100_live_steps_variants.json):
    the kernels' profiled time and the wall clock against the datasheet entry's prediction."""
    from roofline.hardware.catalog import load_hardware

    entry = load_hardware("h100-sxm5-80gb")
    body = [[step["step"], step["dtype"],
             *measured_cells(step, step["profiled_kernel_s"], entry, True)]
            for step in json.loads((DATA / "h100_live_steps_variants.json").read_text())
            if step["builder"] == "resnet50" and step["variant"].startswith("channels_last")]
    return table_lines(["step", "dtype", *MEASURED_COLUMNS], body, markdown)


def yaml_cells(step: dict[str, Any], kernels: float, entry: Any) -> list[str]:
    """A training step's kernels against examples/resnet50.yaml's prediction at its batch and
    optimizer on ``entry`` (fp32 as tf32: torch's convolutions run in TF32 by default; the
    model.yaml prices its convolutions and batch norms as channels-last maps'); "-" for an
    inference step, whose batch norms a model.yaml folds into the convolutions."""
    if step["mode"] != "train":
        return ["-", "-"]
    from roofline import analyze_model

    report = analyze_model(ROOT / "examples" / "resnet50.yaml", entry, batch=step["batch"],
                           dtype="tf32" if step["dtype"] == "fp32" else step["dtype"],
                           mode="train", optimizer=step["optimizer"])
    time = report.totals["predicted_time_s"]
    return [f"{time * 1e3:.2f} ms", f"{kernels / time:.2f}"]


def batch_lines(markdown: bool) -> list[str]:
    """ResNet-50's steps at batches 32 and 128 on the H100 and the H200, NCHW and channels_last
    (data/h1?0_live_resnets.json): the batch-norm and transpose rates were fitted at 64, on the
    H100; and a training step's kernels against examples/resnet50.yaml (``yaml_cells``)."""
    from roofline.hardware.catalog import load_hardware

    body = []
    for gpu, name, entry in (("H100", "h100_live_resnets.json", "h100-sxm5-80gb"),
                             ("H200", "h200_live_resnets.json", "h200-sxm-141gb")):
        hw = load_hardware(entry)
        body += [[gpu, step["step"], step["dtype"], str(step["batch"]), step["memory_format"],
                  *measured_cells(step, step["kernel_s"],  # step_record's one profiled step
                                  hw, step["memory_format"] == "channels_last"),
                  *yaml_cells(step, step["kernel_s"], hw)]
                 for step in json.loads((DATA / name).read_text()) if "error" not in step]
    return table_lines(["GPU", "step", "dtype", "batch", "layout", *MEASURED_COLUMNS,
                        "model.yaml", "kernels / model.yaml"], body, markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    from roofline.hardware.catalog import load_hardware

    header = ["GPU", "step", "dtype", "batch", "measured", "datasheet", "ratio", "GEMM share",
              "probed (eager)", "ratio", "probed (graph)", "ratio"]
    body = []
    for gpu, steps_file, datasheet, probed in DEVICES:
        entries = {"datasheet": load_hardware(datasheet)} | {
            f"probed{i}": load_hardware(str(DATA / name)) for i, name in enumerate(probed)}
        for step in json.loads((DATA / steps_file).read_text()):
            p = predicted(step, entries)
            fit, fit_gemm = p["datasheet"]
            shape = f"{step['batch']}" + (f" x {step['side']}" if step["side"] else "")
            row = [gpu, step["step"], step["dtype"], shape, f"{step['best_s'] * 1e3:.2f} ms",
                   f"{fit * 1e3:.2f} ms", f"{step['best_s'] / fit:.2f}", f"{fit_gemm / fit:.0%}"]
            for i in range(2):
                probe = p.get(f"probed{i}", (None, None))[0]
                row += ([f"{probe * 1e3:.2f} ms", f"{step['best_s'] / probe:.2f}"] if probe
                        else ["-", "-"])
            body.append(row)
    print("whole eager steps on a lent H100 SXM5 and H200 (torch 2.11.0+cu130; data/"
          "h1?0_live_steps.json): measured best (H100: of two runs) / predicted")
    print("\n".join(table_lines(header, body, args.markdown)))
    entries = {"datasheet": load_hardware("h100-sxm5-80gb"),
               "probed": load_hardware(str(DATA / "h100_live_probe.yaml")),
               "probed-graph": load_hardware(str(DATA / "h100_live_probe_graph.yaml"))}
    print()
    print("non-GEMM ops on the same H100 (data/h100_live_ops.csv; torch's eager calls, best of "
          "two runs): measured / predicted")
    print("\n".join(op_lines(entries, args.markdown)))
    print()
    print("a Llama-2-7B decode step in plain PyTorch on an H100 and an H200 (data/"
          "h1?0_live_decode.json; benchmarks/_decode_step.py), against the predicted step on "
          "the datasheet entry")
    print("\n".join(decode_lines(args.markdown)))
    print()
    print("ResNet-50 in channels_last on the H100 (data/h100_live_steps_variants.json), against "
          "the datasheet entry's prediction for the channels_last capture")
    print("\n".join(variant_lines(args.markdown)))
    print()
    print("ResNet-50 at batches 32 and 128 on a lent H100 and H200 (data/h1?0_live_resnets.json), "
          "against the datasheet entry's prediction for the capture in the same layout")
    print("\n".join(batch_lines(args.markdown)))


if __name__ == "__main__":
    main()
