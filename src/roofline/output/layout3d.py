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
    dtype = "fp32" if report.network.dtype in ("fp32", "tf32") else "bf16"
    said = {"fp32": "fp32 (TF32)", "bf16": "bf16"}[dtype] + (
        " (fp16 was not timed)" if report.network.dtype == "fp16" else "")
    passes = ["forward"] + (["backward"] if any(
        r.gemm.pass_.startswith("backward") for r in report.results) else [])
    parts = []
    if depthwise:
        each = []
        for pass_ in passes:
            nc, cl = GROUPED_3D_EVIDENCE["depthwise", dtype, pass_]
            each.append(f"{_times(cl / nc)} {pass_} ({cl / 1e3:.2f} against {nc / 1e3:.2f} ms)")
        parts.append(f"a depthwise 3 x 3 x 3 Conv3d of 96 channels ran slower in "
                     f"channels_last_3d than in NCDHW, where torch runs its own depthwise "
                     f"kernels, {' and '.join(each)}, so keep this step's {n_depthwise} "
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
