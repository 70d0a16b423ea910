"""The sentence for a step's convolutions priced no faster than the GPU's CUDA cores for their
few input channels, fewer than 16 (``analysis.gpu_conv_channels``): which GEMMs, what the bound
adds and at what rate, and what padding such a stem did on a lent H100; and the one for a 3-D
convolution's weight gradient to few output channels, which that H100 ran far below the GEMM
model, unpriced (``few_outputs_warning``). Display only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..model.gemm import Gemm

#: A lent H100 SXM5's stems of 3 input channels padded to the 16-byte rule, 4 (TF32) or 8 (bf16)
#: (torch 2.11, cuDNN 9.19; benchmarks/data/h100_live_convs_align.csv, printed by
#: benchmarks/bench_gpu_convs_align.py: each stem's forward plus backward kernels, padded over
#: 3 channels): 3-D 0.50-0.58 in bf16 and 1.33-1.50 in TF32, 2-D 0.92-0.98 but 2.06 in bf16 on
#: NCHW maps (cuDNN ran that one on CUDA cores); the prediction, which holds 4 and 8 channels
#: to the CUDA cores' rate too, gives 1.23-2.67 (the FLOPs padding adds).
PADDED_STEMS = {"3-D bf16": (0.50, 0.58), "3-D TF32": (1.33, 1.50), "2-D": (0.92, 0.98),
                "2-D bf16 NCHW": (2.06, 2.06)}


def narrow_channels_warning(report: Report) -> str | None:
    """``MM1, MM62 (stem.0: 3 input channels): ...``: the convolution GEMMs of ``report`` that
    ``analysis.predict`` holds to the CUDA cores' rate, the seconds that adds and that rate
    (their FLOPs over their predicted kernels' time, cuDNN's transposes left out), and
    ``PADDED_STEMS`` where one of them is a stem (a grouped convolution's few channels a group,
    named with its groups, are the network's own, not a stem's to pad); None where none is (a CPU,
    a dtype the GPU runs on CUDA cores anyway, 16 channels or more)."""
    from ..analysis.gpu_conv_channels import input_channels, narrow_channels
    from ..analysis.predict import predict_gemm
    from ..analysis.report import gemm_of
    from ..model.repeats import distinct, named
    from ..units import seconds
    from .report import listed

    # the bound holds only narrow channels' GEMMs: a step without one is not walked copy by
    # copy (a layer repeated 10**6 times is 10**6 copies)
    if report.hardware.kind != "gpu" or not any(
            narrow_channels(r.gemm) for r in distinct(report.results)):
        return None
    found: dict[int, tuple[float, float]] = {}  # id(Gemm) -> the bound's seconds, the kernel's
    names, layers, added, flops, time = [], {}, 0.0, 0.0, 0.0
    groups: dict[str, int] = {}  # a grouped convolution's layer -> its groups
    for name, layer, _, result in named(report.results, gemm_of):
        gemm = result.gemm
        if id(gemm) not in found:
            made = (predict_gemm(gemm, report.hardware)
                    if input_channels(gemm) is not None else None)
            bound = made.terms.get("narrow_channels_s", 0.0) if made else 0.0
            found[id(gemm)] = (bound, made.time_s - made.terms.get("transpose_s", 0.0)
                               if made and bound else 0.0)
        bound, kernel = found[id(gemm)]
        if bound > 0:
            names.append(name)
            layers[layer] = input_channels(gemm)
            if gemm.batch_count > 1:  # a group's channels: the network's design, not a stem's
                groups[layer] = gemm.batch_count
            added, flops, time = added + bound, flops + gemm.flops, time + kernel
    if not names:
        return None
    channels = ", ".join(
        f"{layer}: {c} input channel{'s' * (c != 1)}"
        + (f" a group, {groups[layer]} groups" if layer in groups else "")
        for layer, c in layers.items())
    head = (f"{listed(names)} ({channels}): fewer than 16 input channels are predicted no "
            f"faster than the GPU's CUDA cores (the fp32 peak at the model's sustained share: "
            f"{flops / time / 1e12:.3g} TFLOP/s, {seconds(added)} more than the Tensor-Core "
            f"model), as a lent H100 ran stems of 3, 4 and 8 channels "
            f"(analysis.gpu_conv_channels)")
    if len(groups) == len(layers):  # grouped ones only: no stem to pad
        return (head + "; a grouped convolution's channels a group are the network's own, "
                       "and were timed there in 32 groups of 4 channels and 96 of 1 only, each "
                       "below that rate")
    p = {k: "-".join(f"{v:.2f}" for v in dict.fromkeys(pair)) for k, pair in PADDED_STEMS.items()}
    return (f"{head}. Padded there to the 16-byte rule's 4 (TF32) or 8 (bf16) channels, a "
            f"stem's forward and backward took {p['3-D bf16']} of their time in 3-D bf16, "
            f"{p['3-D TF32']} in 3-D TF32, {p['2-D']} in 2-D and {p['2-D bf16 NCHW']} in 2-D "
            f"bf16 on NCHW maps, where the prediction gives 1.23-2.67, the FLOPs padding adds "
            f"at the same rate (benchmarks/data/h100_live_convs_align.csv)")


#: a 3-D convolution to fewer output channels, not grouped, is warned of (``few_outputs_warning``;
#: the H100's depthwise ones, one a group, ran their backward 1.07-2.46x their prediction)
NARROW_OUTPUTS = 16

#: A lent H100 SXM5's weight gradient of a 3-D convolution to 3 output channels (an RGB or a
#: 3-class output layer: 64 to 3 channels, 3 x 3 x 3, padding 1, batch 8 of 16 x 112 x 112;
#: torch 2.11, cuDNN 9.19; benchmarks/data/h100_live_convs_align.csv, set ``align``, its
#: ``backward`` rows' weight-gradient kernel): 2 x (64 x 27) x 3 x (8 x 16 x 112 x 112) =
#: 16,647,192,576 FLOPs in the milliseconds below, NCDHW and NDHWC. cuDNN ran
#: ``sm80_xmma_wgrad_implicit_gemm_indexed_wo_smem`` in TF32 and
#: ``wgrad2d_grouped_direct_kernel`` in bf16, 2.6 and 0.44-0.48 TFLOP/s, where the GEMM model
#: prices a Tensor-Core GEMM (the layer's backward ran 3.4-4.2x its prediction in TF32 and
#: 25-40x in bf16: bench_gpu_convs_align.py). One layer, so a rate to show, not to price by; the
#: 2-D one (64 to 3, 3 x 3) ran Tensor-Core kernels at 6-21 TFLOP/s, its backward 1.06-1.75x.
FEW_OUTPUTS_FLOPS = 16_647_192_576
FEW_OUTPUTS_MS = {"tf32": (6.45909, 6.48467), "bf16": (34.66736, 37.52438)}


def few_outputs_warning(report: Report) -> str | None:
    """``MM9 (out: 3 output channels): ...``: on a GPU, the weight-gradient GEMMs of ``report``'s
    3-D convolutions to fewer than 16 output channels, not grouped, of a filter of more than one
    tap (a 1 x 1 x 1 one was never timed), what the lent H100 ran such a
    one at (``FEW_OUTPUTS_FLOPS`` in ``FEW_OUTPUTS_MS``) and what they would take at that rate,
    which the prediction does not count; None where there is none (a CPU, a 2-D one, 16
    channels or more)."""
    from ..analysis.predict import predict_gemm
    from ..analysis.report import gemm_of
    from ..model.repeats import distinct, named
    from ..units import seconds
    from .report import listed

    # a step without such a GEMM is not walked copy by copy
    if report.hardware.kind != "gpu" or not any(
            _few_outputs(r.gemm) for r in distinct(report.results)):
        return None
    names, layers, flops, predicted = [], {}, 0.0, 0.0
    times: dict[int, float] = {}  # id(Gemm) -> its predicted time: a repeat's copies share one
    for name, layer, _, result in named(report.results, gemm_of):
        gemm = result.gemm
        if not _few_outputs(gemm):
            continue
        names.append(name)
        layers[layer] = gemm.n
        flops += gemm.flops
        if id(gemm) not in times:
            times[id(gemm)] = predict_gemm(gemm, report.hardware).time_s
        predicted += times[id(gemm)]
    if not names:
        return None
    e = FEW_OUTPUTS_MS
    rates = {d: tuple(FEW_OUTPUTS_FLOPS / (ms * 1e-3) for ms in e[d]) for d in e}
    dtype = "bf16" if report.network.dtype in ("bf16", "fp16") else "tf32"
    low, high = flops / max(rates[dtype]), flops / min(rates[dtype])
    outputs = ", ".join(f"{layer}: {k} output channel{'s' * (k != 1)}"
                        for layer, k in layers.items())
    said = {"tf32": "TF32", "bf16": "bf16"}[dtype]

    def span(values: tuple[float, ...], scale: float, unit: str) -> str:
        low_v, high_v = min(values) * scale, max(values) * scale
        return (f"{low_v:.3g} {unit}" if high_v < low_v * 1.02 else
                f"{low_v:.3g}-{high_v:.3g} {unit}")

    at = (seconds(low) if high < low * 1.02 else f"{seconds(low)} to {seconds(high)}")
    return (f"{listed(names)} ({outputs}): the weight gradient of a 3-D convolution to fewer "
            f"than {NARROW_OUTPUTS} output channels ran far below the GEMM model on a lent "
            f"H100: one of 64 to 3 channels, 3 x 3 x 3, took {span(e['tf32'], 1, 'ms')} in "
            f"TF32 ({span(rates['tf32'], 1e-12, 'TFLOP/s')}) and "
            f"{span(e['bf16'], 1, 'ms')} in bf16 ({span(rates['bf16'], 1e-12, 'TFLOP/s')}) "
            f"for its 16.6 GFLOP (benchmarks/data/h100_live_convs_align.csv). At that {said} "
            f"rate {'these' if len(names) > 1 else 'this one'} would take {at} where "
            f"{seconds(predicted)} is predicted; the prediction does not count it (one layer "
            f"timed: time yours)")


def _few_outputs(gemm: Gemm) -> bool:
    """Whether ``gemm`` is the weight gradient ``few_outputs_warning`` speaks of: a 3-D
    convolution's to fewer than ``NARROW_OUTPUTS`` output channels, not grouped (depthwise ones
    ran 1.1-2.5x their prediction), of a filter of more than one tap (1 x 1 x 1: never timed)."""
    return (gemm.pass_ == "backward-weight" and "T x R x S" in gemm.roles[0]
            and gemm.roles[1] == "out_channels" and gemm.n < NARROW_OUTPUTS
            and gemm.batch_count == 1 and gemm.align[0] >= 2)
