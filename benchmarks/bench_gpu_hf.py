"""Do Hugging Face models, trained and served as users run them, take the time and memory roofline
predicts from a capture? On demand (no test):

    .venv/bin/python benchmarks/bench_gpu_hf.py [--markdown]

Needs torch and transformers (``pip install -e ".[torch,hf]"``); no GPU: it reads what
benchmarks/gpu_measure.py ``--parts hf,masks`` timed on a lent H100 SXM5 (data/
h100_live_hf_steps.json, h100_live_masks.csv, h100_live_hf_env.json; data/README.md).

First, each step of ``_hf_steps.HF_STEPS`` (GPT-2, BERT, T5-small, ViT-Base, and Llama-2-7B,
Qwen2-7B and Mixtral-8x7B with fewer layers, built by transformers 5.24; a training step is the
model's own loss on its labels and ``loss.backward()``, with AdamW's step where named; the
padded step's attention mask pads a quarter of odd rows): the same module and inputs captured
here with ``roofline.torch.capture`` (inputs given with values: transformers reads the mask
back) and predicted on the H100's datasheet entry and on the entries the probe saved on such a
machine (data/h100_live_probe*.yaml). Printed: the measured best of its runs (two or three),
the kernels' own summed time (one profiled step: what the GPU did, without the host's gaps),
each prediction and measured / predicted, and the peak memory torch allocated against the
capture's step memory (weights, gradients, optimizer state, activations; the entry's workspace
reserve left out).

Second, ``scaled_dot_product_attention`` under torch's default backend (cuDNN's kernels on that
H100) causal, unmasked and through a boolean mask over every pair, without and with dropout
0.1, forward and backward at four shapes: measured / predicted with and without the per-score
work of a mask and dropout (``analysis.gpu_ops.ATTENTION_SCORE_CLOCKS``, fitted on these rows:
the with-figures are a fit's residuals, the without-figures what the published rates alone
give).

Then a Llama-2-7B decode step at the batches around the largest analyze says fits
(data/h100_live_fits.json), fp32 convolutions with TF32 on and off (data/
h100_live_convs.csv) against their captures, fused attention off the multiples of 128
(data/h1?0_live_seqs.csv), and the training steps' bias gradients, the profiled steps' reduce
kernels against the captured sums over rows.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

from _tables import table_lines

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"


def captured(step: Any) -> Any:
    """The step's Network, captured on the meta device as gpu_measure.py ran it (its inputs
    on the host, with values: transformers reads the mask back)."""
    import torch
    from _hf_steps import hf_inputs, hf_model, torch_dtype, wrapped

    from roofline.torch import capture

    dtype = torch_dtype(torch, step)
    model = hf_model(torch, step, "meta", dtype)
    x, y = hf_inputs(torch, model, step, "cpu", dtype)
    return capture(wrapped(torch, model, step), x, y, mode=step.mode, name=step.name,
                   optimizer=torch.optim.AdamW if step.optimizer == "adamw" else "none")


def step_lines(markdown: bool) -> list[str]:
    from _hf_steps import HF_STEPS

    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware

    entries = {"datasheet": load_hardware("h100-sxm5-80gb"),
               "probed": load_hardware(str(DATA / "h100_live_probe.yaml")),
               "probed (graph)": load_hardware(str(DATA / "h100_live_probe_graph.yaml"))}
    measured = {r["step"]: r for r in json.loads((DATA / "h100_live_hf_steps.json").read_text())}
    header = ["step", "dtype", "batch x seq", "measured", "kernels"]
    for label in entries:
        header += [label, "ratio", "kernels ratio"]
    header += ["peak memory", "predicted", "ratio"]
    body = []
    for step in HF_STEPS:
        if step.name not in measured:
            continue
        row = measured[step.name]
        best, kernels = min(row.get("runs_best_s", [row["best_s"]])), row["kernel_s"]
        network = captured(step)
        line = [step.name, step.dtype, f"{step.batch} x {step.seq}", f"{best * 1e3:.1f} ms",
                f"{kernels * 1e3:.1f} ms"]
        for hw in entries.values():
            report = analyze(network, hw)
            p = report.totals["predicted_time_s"]
            line += [f"{p * 1e3:.1f} ms", f"{best / p:.2f}", f"{kernels / p:.2f}"]
        memory = analyze(network, entries["datasheet"]).memory
        held = sum(v for k, v in memory.parts.items() if k != "workspace")
        line += [f"{row['max_memory_bytes'] / 1e9:.2f} GB", f"{held / 1e9:.2f} GB",
                 f"{row['max_memory_bytes'] / held:.2f}"]
        body.append(line)
    return table_lines(header, body, markdown)


def mask_op(row: dict[str, str]) -> Any:
    """The fused attention op of one masks.csv row, as the capture records it."""
    from roofline.model.ops import AttentionShape, Op

    b, h, s, d = (int(x) for x in row["shape"].split("x"))
    causal, forward = row["mask"] == "causal", row["op"] == "sdpa"
    pairs = s * s // 2 if causal else s * s
    masked = row["mask"] in ("bool", "bias")
    shape = AttentionShape(d, s, s, causal, masked, float(row["dropout"]) > 0,
                           mask_grad=row["mask"] == "bias")
    # the mask as the kernel reads it (a boolean one converted to bf16 first), once a pass; a
    # bias that needs its gradient has it written backward, B x H x S x S
    mask = {"bool": b * s * s * 2, "bias": b * h * s * s * 2}.get(row["mask"], 0)
    grad = b * h * s * s * 2 if row["mask"] == "bias" and not forward else 0
    return Op("OP1", "attn", "forward" if forward else "backward",
              "flash-attention" if forward else "flash-attention-backward",
              (4 if forward else 10) * b * h * d * pairs,
              b * h * s * d * 2 * (4 if forward else 8) + mask + grad, shape)


def mask_lines(markdown: bool) -> list[str]:
    import dataclasses

    from roofline.analysis.gpu_ops import predict_op
    from roofline.hardware.catalog import load_hardware
    from roofline.model.ops import AttentionShape

    hw = load_hardware("h100-sxm5-80gb")
    peak, bw = hw.peak_flops_per_s("bf16"), hw.bandwidth_bytes_per_s
    groups: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for name, label in (("h100_live_masks.csv", "first"), ("h100_live_masks_repeat.csv",
                                                           "repeat")):
        with open(DATA / name, newline="") as f:
            for row in csv.DictReader(f):
                op = mask_op(row)
                a = op.attention
                assert a is not None
                plain = dataclasses.replace(op, attention=AttentionShape(a.head_dim, a.q, a.s,
                                                                         a.causal))
                t = float(row["time_ms"]) * 1e-3
                cell = groups.setdefault((row["op"], row["mask"], row["dropout"]), {})
                cell.setdefault(label, []).append(
                    t / predict_op(op, hw, "bf16", peak, bw).time_s)
                cell.setdefault(f"{label} without", []).append(
                    t / predict_op(plain, hw, "bf16", peak, bw).time_s)

    def text(values: list[float] | None) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"
    header = ["pass", "mask", "dropout", "first run (per-score work fitted)",
              "without the per-score work", "repeat run (bias rows fitted)", "without"]
    body = [[op, mask, dropout, text(r.get("first")), text(r.get("first without")),
             text(r.get("repeat")), text(r.get("repeat without"))]
            for (op, mask, dropout), r in groups.items()]
    return table_lines(header, body, markdown)


def fit_lines(markdown: bool) -> list[str]:
    """data/h100_live_fits.json: a Llama-2-7B decode step at 2048 tokens run at the batches
    around the largest analyze says fits an H100 SXM5, against analyze's memory there."""
    from roofline.api import analyze_model

    header = ["batch", "ran", "peak allocated", "analyze: needs", "analyze: fits"]
    body = []
    for row in json.loads((DATA / "h100_live_fits.json").read_text()):
        report = analyze_model(str(ROOT / "examples" / "hf" / "llama-2-7b.json"),
                               "h100-sxm5-80gb", mode="inference", phase="decode",
                               batch=row["batch"], seq=row["kv"], dtype="bf16")
        memory = report.memory
        assert memory is not None
        body.append([str(row["batch"]), "yes" if row["fits"] else "out of memory",
                     f"{row['max_memory_bytes'] / 1e9:.2f} GB",
                     f"{memory.total_bytes / 1e9:.2f} GB of {memory.capacity_bytes / 1e9:.2f}",
                     "yes" if memory.fits else "no"])
    return table_lines(header, body, markdown)


def conv_lines(markdown: bool) -> list[str]:
    """data/h100_live_convs.csv: fp32 convolutions forward with ``cudnn.allow_tf32`` on and
    off, against the capture of the same convolution under the same flag (TF32 GEMMs where it
    is on, ``GemmShape.tf32``) on the H100's datasheet entry."""
    import torch

    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware
    from roofline.torch import capture

    hw = load_hardware("h100-sxm5-80gb")
    header = ["convolution (batch x C x K x side x R)", "allow_tf32", "measured", "predicted",
              "measured / predicted", "as fp32 (before 0.9.0)"]
    body = []
    with open(DATA / "h100_live_convs.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["op"] != "forward":
                continue
            b, c, k, side, r = (int(x) for x in row["shape"].split("x"))
            tf32 = row["allow_tf32"] == "True"
            with torch.device("meta"):
                conv = torch.nn.Conv2d(c, k, r, padding=r // 2, bias=False)
            times = {}
            for flag in (tf32, False):
                with torch.backends.cudnn.flags(enabled=True, allow_tf32=flag):
                    network = capture(conv, torch.zeros(b, c, side, side), mode="inference")
                times[flag] = analyze(network, hw).totals["predicted_time_s"]
            measured = float(row["time_ms"]) * 1e-3
            body.append([row["shape"], str(tf32), f"{measured * 1e6:.0f} us",
                         f"{times[tf32] * 1e6:.0f} us", f"{measured / times[tf32]:.2f}",
                         f"{measured / times[False]:.2f}" if tf32 else ""])
    return table_lines(header, body, markdown)


def seq_lines(markdown: bool) -> list[str]:
    """data/h1?0_live_seqs.csv: fused attention at lengths off the multiples of 128 and at them,
    its kernels' profiled time against the op's prediction on the datasheet entry, with the
    last blocks computed in full (``gpu_ops.tile_share``) and the backward's rate going on
    falling below 512 tokens (``gpu_ops.BACKWARD_SHORTEST``), and without either (before
    0.9.0)."""
    import statistics
    from unittest import mock

    from roofline.analysis import gpu_ops
    from roofline.hardware.catalog import load_hardware
    from roofline.model.ops import AttentionShape, Op

    groups: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    for gpu, name, entry in (("H100", "h100_live_seqs.csv", "h100-sxm5-80gb"),
                             ("H200", "h200_live_seqs.csv", "h200-sxm-141gb")):
        hw = load_hardware(entry)
        with open(DATA / name, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            b, h, seq, d = (int(x) for x in row["shape"].split("x"))
            causal, forward = row["causal"] == "True", row["op"] == "sdpa"
            flops = (4 if forward else 10) * b * h * seq * seq * d // (2 if causal else 1)
            op = Op("OP1", "attn", "forward" if forward else "backward",
                    "flash-attention" if forward else "flash-attention-backward", flops,
                    (4 if forward else 8) * b * h * seq * d * 2,
                    attention=AttentionShape(d, seq, seq, causal))
            args = (hw, "bf16", hw.peak_flops_per_s("bf16"), hw.bandwidth_bytes_per_s)
            now = gpu_ops.predict_op(op, *args).time_s
            with mock.patch.dict(gpu_ops.ATTENTION_TILES, {"forward": (1, 1),
                                                           "backward": (1, 1)}), \
                    mock.patch.object(gpu_ops, "BACKWARD_SHORTEST", gpu_ops.SEQS[0]):
                before = gpu_ops.predict_op(op, *args).time_s
            measured = float(row["kernel_ms"]) * 1e-3
            key = (gpu, row["op"], str(d), "multiple of 128" if seq % 128 == 0 else "off 128",
                   "causal" if causal else "")
            groups.setdefault(key, []).append((measured / now, measured / before))

    def cells(ratios: list[float]) -> list[str]:
        within = sum(1 / 1.25 <= r <= 1.25 for r in ratios) / len(ratios)
        return [f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
                f"{within:.0%}"]
    body = [[*key, str(len(v)), *cells([a for a, _ in v]), *cells([b for _, b in v])]
            for key, v in sorted(groups.items())]
    return table_lines(["GPU", "pass", "head dim", "lengths", "mask", "shapes",
                        "measured / predicted", "within 1.25x", "before 0.9.0",
                        "within 1.25x"], body, markdown)


#: torch's reduce kernels that sum over a matrix's rows (vectors of 4 or 2 adjacent columns a
#: thread; a 1-wide one is also the kernel of sums along a row, which stream)
ROW_SUM_KERNELS = ("reduce_kernel<128, 4", "reduce_kernel<256, 2")
#: torch's mean along rows (its name as the profile lists it)
MEAN_KERNELS = ("MeanOps<float",)
#: torch's layer norm backward kernels (dX, then the weight gradients)
LAYER_NORM_KERNELS = ("layer_norm_grad_input_kernel", "GammaBetaBackwardCUDAKernelTemplate")


def step_kernel_lines(markdown: bool, kernels: tuple[str, ...], keep: Callable[[Any], bool],
                      without: str, needed: int = 1, train: bool = True) -> list[str]:
    """The training steps' (``train`` False: every step's) captured ops with ``Op.summed`` that
    ``keep`` accepts against the profiled step's ``kernels`` (its listed kernels are the
    longest 30, each with all its calls; a step whose list lacks any of the first ``needed`` of
    them is left out), predicted on the datasheet entry and ``without`` their ``summed`` (the
    op's prediction before it was priced kernel by kernel)."""
    from dataclasses import replace

    from _hf_steps import HF_STEPS

    from roofline.analysis.gpu_ops import predict_op
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware

    hw = load_hardware("h100-sxm5-80gb")
    measured = {r["step"]: r for r in json.loads((DATA / "h100_live_hf_steps.json").read_text())}
    body = []
    for step in HF_STEPS:
        row = measured.get(step.name)
        if row is None or (train and step.mode != "train"):
            continue
        listed = [v for k, v in row["kernels"].items() if any(name in k for name in kernels)]
        if not all(any(name in k for k in row["kernels"]) for name in kernels[:needed]):
            continue  # one of the kernels it runs is not among those listed
        took = sum(k["s"] for k in listed)
        ops = [r for r in analyze(captured(step), hw).ops
               if r.op.summed is not None and keep(r.op)]
        predicted = sum(r.predicted_time_s for r in ops)
        dtype = step.dtype
        before = sum(predict_op(replace(r.op, summed=None), hw, dtype, hw.peak_flops_per_s(
            dtype), hw.bandwidth_bytes_per_s).time_s for r in ops)
        body.append([step.name, dtype, f"{sum(k['calls'] for k in listed)} / {len(ops)}",
                     f"{took * 1e3:.2f} ms", f"{predicted * 1e3:.2f} ms",
                     f"{took / predicted:.2f}", f"{before * 1e3:.2f} ms", f"{took / before:.2f}"])
    return table_lines(["step", "dtype", "kernel calls / ops", "measured", "predicted", "ratio",
                        without, "ratio"], body, markdown)


def bias_lines(markdown: bool) -> list[str]:
    """The training steps' sums over rows (bias gradients, position embeddings') against the
    profiled step's ``ROW_SUM_KERNELS`` (the memsets beside staged sums not counted), through
    torch's reduce kernel (``analysis.gpu_reduce``, fitted on lone sums, never on these steps)
    and as a stream alone."""
    return step_kernel_lines(markdown, ROW_SUM_KERNELS, lambda op: not op.summed.along_rows
                             and op.kind in ("aten.sum", "aten.mean"), "as a stream")


def mean_lines(markdown: bool) -> list[str]:
    """Every step's means along rows (RMSNorm's ``x.pow(2).mean(-1)`` in fp32) against the
    profiled step's ``MEAN_KERNELS``, through torch's reduce kernel and as a stream alone."""
    return step_kernel_lines(markdown, MEAN_KERNELS, lambda op: op.summed.along_rows
                             and op.kind == "aten.mean", "as a stream", train=False)


def layer_norm_lines(markdown: bool) -> list[str]:
    """The training steps' layer norm backwards against the profiled step's
    ``LAYER_NORM_KERNELS``, through torch's two kernels (``analysis.gpu_layer_norm``, fitted
    on lone layer norms, data/h100_live_norm_kernels.csv, never on these steps) and as the row
    passes priced them before."""
    return step_kernel_lines(markdown, LAYER_NORM_KERNELS,
                             lambda op: op.kind == "aten.native_layer_norm_backward",
                             "row passes", needed=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    env = json.loads((DATA / "h100_live_hf_env.json").read_text())
    sections = (
        (f"Hugging Face steps on a lent {env['name']} (torch {env['torch']}, transformers "
         f"{env['transformers'].split()[0]}; data/h100_live_hf_steps.json): measured best of the "
         f"runs and one profiled step's kernels against the captured step's prediction",
         step_lines),
        ("scaled_dot_product_attention on the same H100 (torch's default backend: cuDNN's "
         "kernels, the memory-efficient one for a bias that needs its gradient; data/"
         "h100_live_masks*.csv, two runs on two machines; four shapes each): measured / "
         "predicted, median (range)", mask_lines),
        ("a Llama-2-7B decode step at 2048 tokens (benchmarks/_decode_step.py, bf16) on a lent "
         "H100 at the batches around the largest analyze says fits (data/h100_live_fits.json)",
         fit_lines),
        ("fp32 convolutions forward on the same H100 (data/h100_live_convs.csv), "
         "cudnn.allow_tf32 on (torch's default) and off, against their capture under the same "
         "flag", conv_lines),
        ("fused attention at lengths off the multiples of 128 and at them on a lent H100 and "
         "H200 (data/h1?0_live_seqs.csv, the H200's never fitted: torch's default backend, "
         "cuDNN's kernels; about 16k tokens a batch), its kernels against the op's prediction: "
         "median (range)", seq_lines),
        ("bias gradients (sums over rows) in the training steps above: the profiled step's "
         "reduce kernels against the captured sums' prediction on the datasheet entry "
         "(analysis.gpu_reduce, fitted on lone sums) and as a stream alone", bias_lines),
        ("means along rows (RMSNorm's, fp32) in the steps above whose profile lists them: the "
         "reduce kernels against the captured means' prediction (analysis.gpu_reduce, fitted on "
         "lone sums over rows) and as a stream alone", mean_lines),
        ("layer norm backwards in the same steps: the profiled step's dX and weight-gradient "
         "kernels against the captured ops' prediction (analysis.gpu_layer_norm, fitted on lone "
         "layer norms) and as its row passes priced it before", layer_norm_lines))
    for i, (title, lines) in enumerate(sections):
        print(("\n" if i else "") + title)
        print("\n".join(lines(args.markdown)))


if __name__ == "__main__":
    main()
