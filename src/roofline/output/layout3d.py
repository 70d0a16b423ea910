"""What a lent H100 measured for depthwise and grouped 3-D convolutions in channels_last_3d
against NCDHW: the words the layout warning (``output.times.layout_warning``) qualifies its
channels_last_3d advice with where a step has such convolutions. Display only.

channels_last_3d is no advice for every 3-D convolution. On NCDHW maps torch runs a depthwise
Conv3d on its own kernels (``conv_depthwise3d``), in channels_last_3d it hands it to cuDNN, which
ran it 4.0-36x slower; grouped ones went either way, 0.26-1.65x (``GROUPED_3D_EVIDENCE``). Only
3-D ones were timed so: nothing is said of a 2-D depthwise or grouped convolution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis.report import Report

#: A lent H100 SXM5's Conv3d layers one at a time (2026-11-28, torch 2.11.0+cu130, cuDNN 9.19;
#: benchmarks/data/h100_live_convs_align.csv, its sets ``dw``, ``grouped`` and ``grouped4``,
#: written by benchmarks/gpu_convs_align.py, printed by bench_gpu_convs_align.py): a call's best
#: wall-clock microseconds (the CSV's ``eager_us``) in NCDHW and in channels_last_3d, by layer,
#: dtype (fp32 ran in TF32, torch's default) and pass (forward under no_grad; backward the
#: input's and the weight's gradients). All 3 x 3 x 3, stride 1, padding 1, batch 8 of 16
#: frames: ``depthwise`` 96 channels of 56 x 56 (96 groups), ``8 groups`` 192 channels of 28 x 28
#: (24 a group), ``32 groups`` 128 of 28 x 28 (4 a group). Their kernels' profiled sums
#: (``kernel_us``) agree but where cuDNN launched a kernel per group, which sum past the wall
#: clock: the depthwise bf16 backward's 867 ms of kernels took 113 ms a call.
GROUPED_3D_EVIDENCE = {
    ("depthwise", "fp32", "forward"): (698.182, 7506.336),
    ("depthwise", "fp32", "backward"): (2708.480, 10788.320),
    ("depthwise", "bf16", "forward"): (728.608, 3230.592),
    ("depthwise", "bf16", "backward"): (3167.648, 112944.450),
    ("8 groups", "fp32", "forward"): (607.128, 893.048),
    ("8 groups", "fp32", "backward"): (1879.008, 2269.888),
    ("8 groups", "bf16", "forward"): (2439.008, 625.419),
    ("8 groups", "bf16", "backward"): (815.792, 1346.256),
    ("32 groups", "fp32", "forward"): (321.735, 239.880),
    ("32 groups", "fp32", "backward"): (3653.568, 3845.568),
    ("32 groups", "bf16", "forward"): (3701.216, 4129.760),
    ("32 groups", "bf16", "backward"): (406.668, 310.848),
}
EVIDENCE_FILE = "benchmarks/data/h100_live_convs_align.csv"


def grouped_3d_convs(report: Report) -> tuple[list[str], list[str], int, int]:
    """The layers of ``report``'s depthwise 3-D convolutions (a group's input channels 1) and of
    its other grouped ones, and how many of each the step runs (their forward GEMMs: Conv3d's,
    whose first role is ``batch x D x P x Q``; a transposed one's is not, never timed)."""
    from ..analysis.gpu_conv_channels import input_channels
    from ..analysis.report import gemm_of
    from ..model.repeats import named

    depthwise: dict[str, None] = {}
    grouped: dict[str, None] = {}
    counts = [0, 0]
    for _, layer, _, result in named(report.results, gemm_of):
        gemm = result.gemm
        if (gemm.pass_ != "forward" or gemm.batch_count == 1
                or gemm.roles[0] != "batch x D x P x Q"):
            continue
        one = input_channels(gemm) == 1
        (depthwise if one else grouped)[layer] = None
        counts[not one] += 1
    return list(depthwise), list(grouped), counts[0], counts[1]


def _times(ratio: float) -> str:
    return f"{ratio:.3g}x"


def _timed_as(report: Report) -> tuple[str, str, list[str]]:
    """The dtype of ``GROUPED_3D_EVIDENCE`` that speaks for ``report``'s step (bf16 for fp16,
    never timed), how to say it, and the passes the step runs (forward; and backward)."""
    dtype = "fp32" if report.network.dtype in ("fp32", "tf32") else "bf16"
    said = {"fp32": "fp32 (TF32)", "bf16": "bf16"}[dtype] + (
        " (fp16 was not timed)" if report.network.dtype == "fp16" else "")
    passes = ["forward"] + (["backward"] if any(
        r.gemm.pass_.startswith("backward") for r in report.results) else [])
    return dtype, said, passes


def _depthwise_evidence(dtype: str, passes: list[str]) -> str:
    """``a depthwise 3 x 3 x 3 Conv3d of 96 channels ran slower ... 10.8x forward (7.51 against
    0.70 ms)``: the H100's depthwise rows of ``GROUPED_3D_EVIDENCE`` in ``dtype`` and
    ``passes``."""
    each = []
    for pass_ in passes:
        nc, cl = GROUPED_3D_EVIDENCE["depthwise", dtype, pass_]
        each.append(f"{_times(cl / nc)} {pass_} ({cl / 1e3:.2f} against {nc / 1e3:.2f} ms)")
    return (f"a depthwise 3 x 3 x 3 Conv3d of 96 channels ran slower in channels_last_3d than "
            f"in NCDHW, where torch runs its own depthwise kernels, {' and '.join(each)}")


def grouped_3d_words(report: Report) -> str | None:
    """The clause the layout warning adds to its channels_last_3d advice for a step with
    depthwise or grouped 3-D convolutions (module docstring): what the lent H100 measured in the
    step's dtype (bf16's for fp16, which it did not time) and passes (forward; forward and
    backward where the step has a backward), and what to do (keep depthwise ones NCDHW, time
    grouped ones both ways); None where it has neither."""
    from .report import listed

    depthwise, grouped, n_depthwise, n_grouped = grouped_3d_convs(report)
    if not depthwise and not grouped:
        return None
    dtype, said, passes = _timed_as(report)
    parts = []
    if depthwise:
        parts.append(f"{_depthwise_evidence(dtype, passes)}, so keep this step's {n_depthwise} "
                     f"depthwise 3-D convolution{'s' * (n_depthwise != 1)} "
                     f"({listed(depthwise)}) in NCDHW, weight and input contiguous")
    if grouped:
        each = []
        for pass_ in passes:
            eight, thirty_two = (GROUPED_3D_EVIDENCE[g, dtype, pass_]
                                 for g in ("8 groups", "32 groups"))
            each.append(f"{_times(eight[1] / eight[0])} and "
                        f"{_times(thirty_two[1] / thirty_two[0])} {pass_}")
        parts.append(f"grouped ones of 8 groups of 24 channels and of 32 of 4 took "
                     f"{', '.join(each)} their NCDHW time in channels_last_3d, so time this "
                     f"step's {n_grouped} grouped 3-D convolution{'s' * (n_grouped != 1)} "
                     f"({listed(grouped)}) both ways")
    return (f"not for every 3-D convolution: on a lent H100 ({EVIDENCE_FILE}; a call's wall "
            f"clock, {said}) {'; '.join(parts)}")


def channels_last_depthwise_warning(report: Report) -> str | None:
    """On a GPU, the sentence for a captured module whose depthwise 3-D convolutions ran in
    channels_last_3d (``Network.channels_last_depthwise_3d``): cuDNN's kernels there, which the
    lent H100 ran 4.0-36x slower than torch's own on NCDHW maps (``GROUPED_3D_EVIDENCE``), and
    which the prediction, their GEMMs at the GPU's rates, does not price; None otherwise."""
    from .report import listed

    layers = report.network.channels_last_depthwise_3d
    if report.hardware.kind != "gpu" or not layers:
        return None
    dtype, said, passes = _timed_as(report)
    return (f"depthwise 3-D convolutions ran in channels_last_3d ({listed(list(layers))}), "
            f"priced as their GEMMs: on a lent H100 ({EVIDENCE_FILE}; a call's wall clock, "
            f"{said}) {_depthwise_evidence(dtype, passes)}, which the prediction does not "
            f"count; keep those layers NCDHW (their weight and their input contiguous: "
            f"layer.to(memory_format=torch.contiguous_format), x.contiguous())")
