"""The time table under a report: the roofline bound, the prediction and (``--measure``) the
measurement of each GEMM, and the line that says which is which. Display only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..analysis.gpu_batch_norm import BATCH_NORM_VALUES_PER_SM_CLOCK, batch_norm_kernels
from ..analysis.gpu_layer_norm import (
    GAMMA_BETA_VALUES_PER_BLOCK_CLOCK,
    REREAD,
    REREAD_ROW_BYTES,
)
from ..analysis.gpu_ops import EFFICIENT_TFLOPS, STRIDED_COPY_VALUES
from ..analysis.gpu_reduce import (
    FIRST_S,
    INDEXED_ROUND_S,
    INDEXED_VALUES_PER_SM_CLOCK,
    ROUND_S,
    TAIL_S,
)
from ..analysis.gpu_softmax import (
    SOFTMAX_BACKWARD_VALUES_PER_SM_CLOCK,
    SOFTMAX_REG_COLUMNS,
    SOFTMAX_VALUES_PER_SM_CLOCK,
)
from ..analysis.predict import fit_of
from ..model.repeats import distinct, first_copies, float_total, int_total
from ..units import count, seconds, si, three_digits

if TYPE_CHECKING:
    from ..analysis.report import GemmResult, Report
    from ..hardware.spec import HardwareSpec
    from ..model.network import Network

_LEFT = frozenset({0, 8})


def is_measured(report: Report) -> bool:
    """Whether ``--measure`` timed this report's GEMMs."""
    # a measured report holds every GEMM (analysis.measure); a repeat's copies share a result
    return any(r.measured is not None for r in distinct(report.results))


def time_rows(report: Report, gemms: Any) -> tuple[tuple[str, ...], Iterator[tuple[str, int]],
                                                    dict[int, list[str]], list[int]]:
    """Header, rows (a GEMM's name and the key of the rest), the rest of each distinct
    result's row, and the widest name: GEMM, roof, predicted (and measured, TFLOP/s,
    efficiency, measured / predicted, a flag when a GEMM beat its roof). ``gemms``: the results
    shown (``output.report.Shown``, or a list); a shape's cells are formatted once and the
    rows made as they are read (``table.aligned_shared``)."""
    from .report import Shown

    header: tuple[str, ...] = ("GEMM", "roof", "predicted")
    measured = is_measured(report)
    if measured:
        header += ("measured", "spread", "TFLOP/s", "of roof", "meas/pred", "note")
    shown = Shown.of(gemms)
    scan = shown.scan()
    shapes: dict[tuple[object, ...], list[str]] = {}  # one shape's cells, formatted once
    tails = {key: shapes.setdefault(r.gemm.shape_key, _time_cells(r, measured))
             for key, r in scan.results.items()}
    rows = ((name, id(r)) for name, _, _, r in shown.named())
    return header, rows, tails, [scan.name_width]


def _time_cells(r: GemmResult, measured: bool) -> list[str]:
    """A GEMM's cells after its name: roof, predicted (and its measurement's)."""
    row = [seconds(r.time_s), seconds(r.predicted_time_s)]
    if measured and r.measured is not None:
        d = r.measured.to_dict(r)
        one = d["measured_values"] == 1  # one value (the budget's cut) has no spread
        note = ", ".join(n for n in ("1 value" if one else "",
                                     "BEATS ROOF" if d["beats_roof"] else "") if n)
        row += [seconds(d["measured_time_s"]), "-" if one else f"{d['measured_spread']:.0%}",
                three_digits(d['measured_tflops']), f"{d['efficiency']:.0%}",
                f"{d['measured_over_predicted']:.2f}x", note]
    return row


#: What every "roof" time is, in every output that prints one: each GEMM and op as a pass of
#: its own, so a prediction that fuses one into another (a Linear's bias in its GEMM's epilogue
#: on a GPU, ``analysis.gpu_ops``) can fall below the step's roof.
ROOF_TEXT = ("the pure roofline time of each GEMM and op as a pass of its own, a lower bound "
             "from DRAM")
#: What a step's roof time is, where a table or chart gives one per step (sweep, compare).
STEP_ROOF_TEXT = f"the roof ({ROOF_TEXT}) summed over every GEMM and op"


def step_roof_text(report: Report) -> str:
    """``STEP_ROOF_TEXT`` for ``report``'s step (compare's baseline, sweep's first point):
    where it recomputes activations, that its times hold the forward work run again too
    (``totals['recompute_time_s']``), as analyze's total names it."""
    if not report.totals["recompute_time_s"]:
        return STEP_ROOF_TEXT
    return (f"{STEP_ROOF_TEXT}, and the forward work recompute {report.network.recompute} "
            f"runs again in the backward pass")


def parts_text(report: Report, ops: str = "other ops") -> str:
    """What a step's time is made of, in a label: ``GEMMs and other ops``, or with the
    forward work recomputation runs again, ``GEMMs, other ops and recomputation``."""
    if not report.totals["recompute_time_s"]:
        return f"GEMMs and {ops}"
    return f"GEMMs, {ops} and recomputation"


def time_lines(report: Report) -> list[str]:
    """What says which time is which, and the step's totals of each."""
    lines = [f"roof: {ROOF_TEXT} (the time column above)",
             basis_sentence(report.hardware)] + residency_lines(report)
    totals = report.totals
    text = (f"GEMM time: roof {seconds(totals['gemm_time_s'])}, predicted "
            f"{seconds(totals['predicted_gemm_time_s'])}")
    if is_measured(report) and all(r.measured is not None for r in report.results):
        measured = sum(r.measured.best_s for r in report.results if r.measured is not None)
        text += f", measured {seconds(measured)} (best of each distinct shape, summed)"
        lines.append("measured: timed here (--measure); of roof = achieved FLOP/s / roof")
        lines += measured_residency_lines(report) + measured_untimed_lines(report)
    step = []
    if report.ops:  # else the step is its GEMMs
        again = (", the forward work recomputation runs again as its GEMMs and ops are"
                 if totals["recompute_time_s"] else "") + (
            ", the tensor-parallel communication as said below"
            if report.tensor_parallel else "") + (
            ", the pipeline's hand-offs as said below" if report.pipeline_parallel else "") + (
            ", the experts' dispatch and combine as said below"
            if report.data_parallel and report.data_parallel.moe else "")
        step = [f"step time: roof {seconds(totals['time_s'])}, predicted "
                f"{seconds(totals['predicted_time_s'])} (the GEMMs as predicted, "
                f"{op_basis_text(report)}{again})"]
    return lines + [text] + step + kernel_notes(report)


def kernel_notes(report: Report) -> list[str]:
    """The notes on which kernels a time is of, after the times: dequantized weights, experts
    spread evenly, rows off 16 bytes, operands not K-major, quantized formats, launches, GEMMs
    that beat their roof (text and HTML)."""
    return (dequant_lines(report) + expert_lines(report) + misaligned_row_lines(report)
            + strided_lines(report) + quantized_lines(report) + launch_lines(report)
            + beats_roof_notes(report))


def dequant_lines(report: Report) -> list[str]:
    """Where a GEMM dequantizes a stored B (``Gemm.dequant_flops``), that its bound and time
    count that work beside the FLOP/B column's (the GEMM's FLOPs alone), with the two figures
    of the GEMM it moves most (the first of those alike: 1 + 1 / M of its FLOPs, so the
    fewest rows; a prefill's output layer on its last tokens): a GEMM just under the ridge by
    the column can be compute-bound. Where even that one's two figures print alike (a
    prefill's 65,536 rows: 2434.1 and 2434.1), it says so once."""
    from fractions import Fraction

    if not any(r.gemm.dequant_flops for r in distinct(report.results)):
        return []  # (asked of one copy of each run: a deep model's rows are not built)
    most = max((r.gemm for r in first_copies(report.results) if r.gemm.dequant_flops),
               key=lambda g: Fraction(g.dequant_flops, g.flops))
    column, work = f"{most.intensity:.1f}", f"{most.work_intensity:.1f}"
    figures = (f"{column} FLOP/B in the column, {work} with it" if work != column else
               f"{column} FLOP/B in the column and with it (to 0.1 FLOP/B: its rows share each "
               f"weight's dequantization)")
    return [f"dequantized B: a GEMM with a stored B narrower than its math is placed on the "
            f"roof by its FLOPs and B's dequantization, 2 FLOPs a weight (JSON dequant_flops), "
            f"over its bytes: {most.name} {figures}"]


def expert_lines(report: Report) -> list[str]:
    """Where a mixture of experts' even spread of its routed rows reaches half an expert or
    more beyond the mean that uniform, independent routing would (a decode step at a small
    batch): that the step's expert weights, and so its roof, are the even spread's, the most
    such a step reads (``Transformer.experts_reached``)."""
    from ..model.layers.transformer import Transformer

    step = report.network.step()
    for run in report.network.layer_runs:  # a run's copies alike: its first named, none built
        layer = run.layer
        if not isinstance(layer, Transformer):
            continue
        reached = layer.experts_reached(step)
        if reached is None:
            continue
        active, mean = reached
        if active - mean < 0.5:
            return []
        # over an expert-parallel group the GPU's experts are reached by every GPU's tokens
        shards = layer.expert_shards
        tokens = (f"{step.tokens}" if shards == 1 else
                  f"the group's {step.tokens * shards} ({shards} GPUs x {step.tokens})")
        formula = ("E (1 - (1 - k/E)^T)" if shards == 1 else
                   f"E/{shards} (1 - (1 - k/E)^T), E = {layer.experts}")
        return [f"experts: {run.name(0)}'s {step.tokens * layer.top_k} routed rows are spread "
                f"evenly, over {active} of its {layer.local_experts} experts, whose weights "
                f"the step reads (the most it can); {tokens} tokens routed to "
                f"{layer.top_k} experts each uniformly and independently reach {mean:.2f} on "
                f"average ({formula}), fewer weights read: the roof and the "
                f"prediction are the even spread's"]
    return []


def launch_lines(report: Report) -> list[str]:
    """On a GPU, for a decode step: the prediction is its kernels' time, launched back to back
    as a CUDA graph or a serving engine launches them; eager PyTorch pays the host's time per
    kernel too, measured on an H100 (``gpu_ops.EAGER_DECODE_MEASURED``)."""
    from ..analysis.gpu_ops import EAGER_DECODE_MEASURED as E

    hw = report.hardware
    if hw.kind != "gpu" or report.network.step_phase != "decode":
        return []
    gpu = hw.calibration.gpu_ops if hw.calibration is not None else None
    basis = ("predicted with this probe's per-kernel times from Python, the host's: an eager "
             "PyTorch step's, not a CUDA graph's" if gpu is not None and gpu.timing == "eager"
             else "predicted as the kernels' own time, launched back to back as a CUDA graph "
                  "or a serving engine does")
    return [f"launches: {basis}; called one by one from eager PyTorch a decode step waits on "
            f"the host: a plain PyTorch Llama-2-7B step at batch 1 ({E['kernels']:,} kernels) "
            f"took {seconds(E['eager_s'])} eagerly on an H100, {seconds(E['graph_s'])} as a "
            f"CUDA graph (torch 2.11)"]


def quantized_lines(report: Report, shown: int = 6) -> list[str]:
    """On a GPU, what the prediction of a weight-only GEMM (B stored narrower than its math)
    and of an int8 GEMM assumes, and what torch's own kernels of each took on an H100
    (``gpu_gemm.TORCH_QUANT_MEASURED``): the kernel a serving library runs is predicted, and a
    user of plain torch gets less (the int8 line only where torch's int8 GEMM falls back to
    older kernels: Hopper and Blackwell); on Hopper, what ``torch._scaled_mm`` took of an fp8
    prediction (``gpu_gemm.TORCH_FP8_MEASURED``)."""
    from ..analysis.gpu_gemm import TMA_ARCHITECTURES, TORCH_INT8_BEST_TOPS
    from ..analysis.gpu_gemm import TORCH_FP8_MEASURED as F
    from ..analysis.gpu_gemm import TORCH_QUANT_MEASURED as T

    hw = report.hardware
    if hw.kind != "gpu" or not any(r.gemm.b_dtype or r.gemm.dtype in ("int8", "fp8")
                                   for r in distinct(report.results)):
        return []  # (asked of one copy of each run: a deep model's rows are not built)
    firsts = list(first_copies(report.results))
    weight_only = [r.gemm for r in firsts if r.gemm.b_dtype and r.gemm.b_operand == "weight"]
    int8 = [r.gemm.name for r in firsts if r.gemm.dtype == "int8"]
    fp8 = [r.gemm.name for r in firsts if r.gemm.dtype == "fp8" and not r.gemm.b_dtype]
    lines = []
    if weight_only:
        stored = sorted({g.b_dtype for g in weight_only})
        torch_said = {
            "int4": f"int4 (_weight_int4pack_mm) {_span(T['int4_1_2'])} the prediction at 1-2 "
                    f"tokens and {_span(T['int4_16_64'])} at 16-64",
            "int8": f"int8 (_weight_int8pack_mm) {three_digits(T['int8_weight_1_2'][0])}x and "
                    f"more"}
        measured = [torch_said[d] for d in stored if d in torch_said]
        untimed = [d for d in stored if d not in torch_said]
        torch_text = (f"; torch's own kernels ran slower on an H100 (torch 2.11): "
                      f"{', '.join(measured)}" if measured else "")
        if untimed:
            torch_text += f"; {', '.join(untimed)} weights: no torch kernel timed"
        kernel = ("TensorRT-LLM's fpA_intB, its thin tiles; " if set(stored) & {"int4", "int8"}
                  else "")
        if "fp8" in stored and "fp8" in hw.peak_tflops:
            # vllm/model_executor/layers/quantization/fp8.py, Fp8LinearMethod: Marlin's
            # weight-only fp8 only where the GPU lacks fp8 (below compute capability 8.9)
            torch_text += ("; vLLM runs an fp8 checkpoint on a GPU with fp8 Tensor Cores as "
                           "W8A8, its activations quantized to fp8 as they come (weight-only "
                           "only below compute capability 8.9): --activations fp8 prices that")
        lines.append(
            f"weight-only GEMMs: {_named([g.name for g in weight_only], len(weight_only), shown)}"
            f" (B {', '.join(stored)}): predicted as one kernel that dequantizes B as it loads "
            f"it ({kernel}no weight-only timing is in the fit){torch_text}")
    if int8 and hw.architecture in TMA_ARCHITECTURES:
        lines.append(
            f"int8 GEMMs: {_named(int8, len(int8), shown)}: predicted at the sustained share of "
            f"the int8 Tensor-Core peak; torch._int_mm calls cuBLASLt with no workspace and "
            f"gets older kernels (pytorch/pytorch#187094): on an H100 (torch 2.11) its "
            f"compute-bound GEMMs took {_span(T['int8_compute'])} the prediction, at best "
            f"{TORCH_INT8_BEST_TOPS:,.0f} TOPS, its memory-bound ones {_span(T['int8_memory'])}")
    if fp8 and hw.architecture == "Hopper":
        lines.append(
            f"fp8 GEMMs: {_named(fp8, len(fp8), shown)}: predicted at the sustained share of "
            f"the fp8 Tensor-Core peak; torch._scaled_mm on an H100 (torch 2.11) took "
            f"{_span((F['low'], F['high']))} the prediction on compute-bound GEMMs predicted "
            f"at 50 us or more (median {F['median']:.2f}), at best {F['best_tflops']:,.0f} TFLOP/s "
            f"(pytorch/pytorch#143465: 1,239-1,347 on large shapes; TransformerEngine's GEMM "
            f"5-15% faster, #123761)")
    return lines


def _span(pair: tuple[float, float]) -> str:
    return f"{three_digits(pair[0])}-{three_digits(pair[1])}x"


def misaligned_row_lines(report: Report, shown: int = 6) -> list[str]:
    """On a GPU whose Tensor-Core GEMMs load through TMA (``gpu_gemm.TMA_ARCHITECTURES``), the
    GEMMs whose rows miss 16 bytes, what the prediction charges them
    (``gpu_gemm.misaligned_share``) and what padding would make of it
    (``predict.misaligned_rows``); else nothing."""
    from ..analysis.gpu_gemm import MISALIGNED_C_SHARE, MISALIGNED_SHARES
    from ..analysis.predict import misaligned_rows

    names, count, now, padded = misaligned_rows(report)
    if not count:
        return []
    (two, low), (_, high) = MISALIGNED_SHARES
    return [f"rows off 16 bytes: {_named(names, count, shown)}: "
            f"{report.hardware.architecture}'s Tensor-Core kernels load through TMA, which "
            f"needs 16-byte rows, so these run older kernels, predicted at {low:.0%} of the "
            f"aligned rate ({two}-byte rows; {MISALIGNED_C_SHARE:.0%} where only C's are off) "
            f"or {high:.0%} (4 or 8 bytes) as measured on an H100 with torch 2.11's cuBLAS: "
            f"{seconds(now)} as they are, {seconds(padded)} padded to the 16-byte rule (the "
            f"warnings say what to pad)"]


def strided_lines(report: Report, shown: int = 6) -> list[str]:
    """On a GPU whose fast kernels for a dtype take only K-major operands
    (``gpu_gemm.K_MAJOR_ONLY``: TF32 on Hopper), the GEMMs with an operand that is not, what
    the prediction charges them (``gpu_gemm.STRIDED_SHARES``) and what they would take with
    both K-major (``predict.strided_gemms``); else nothing."""
    from ..analysis.gpu_gemm import STRIDED_SHARES
    from ..analysis.predict import strided_gemms

    names, count, now, k_major = strided_gemms(report)
    if not count:
        return []
    one, two = STRIDED_SHARES
    return [f"operands not K-major: {_named(names, count, shown)}: "
            f"{report.hardware.architecture}'s fast TF32 kernels take A and B contiguous along "
            f"K only (a data gradient reads its weight along N, a weight gradient both operands "
            f"along M and N), so these run others, predicted at {one:.0%} of the rate (one "
            f"operand) or {two:.0%} (both) as measured on an H100 with torch 2.11's cuBLAS: "
            f"{seconds(now)} as they are, {seconds(k_major)} were both K-major (16-bit dtypes "
            f"run any layout at full rate)"]


def _named(names: list[str], count: int, shown: int) -> str:
    """The first ``shown`` of ``names``, and how many of the ``count`` GEMMs are left."""
    listed = names[:shown]
    more = f" and {count - len(listed):,} more" if count > len(listed) else ""
    return ", ".join(listed) + more


def measured_residency_lines(report: Report) -> list[str]:
    """How ``--measure`` treated what the step reads or writes in DRAM though the GEMM fits in
    the cache (``analysis.measure.weights_of``): the weights cycled through, and the GEMMs timed
    repeated all the same (a GPU's, a weight gradient's), which measure faster than the step."""
    residency = report.residency
    if residency is None or not residency.from_dram:  # from_dram: the entry has a cache figure
        return []
    timed = [(r.gemm, r.measured.weights) for r in distinct(report.results)
             if r.measured is not None]
    cycled = sorted({weights for _, weights in timed if weights > 1})
    repeated = sum(1 for gemm, weights in timed if weights == 1 and residency.streams(gemm))
    lines = []
    if cycled:
        copies = f"{cycled[0]}-{cycled[-1]}" if len(cycled) > 1 else str(cycled[0])
        lines.append(f"measured: a weight GEMM that fits in the cache cycled through {copies} "
                     f"copies of its weight, read from DRAM as the step reads it")
    if repeated:
        lines.append(f"measured: {repeated} GEMM{'s' * (repeated > 1)} timed repeated, their "
                     f"weight or gradient in the cache where the step moves it to or from DRAM: "
                     f"faster than the step runs them")
    return lines


def measured_untimed_lines(report: Report) -> list[str]:
    """What ``--measure`` times without: the transposes cuDNN makes around an NCHW
    convolution's GEMM, and the CUDA-core bound of one of fewer than 16 input channels, in
    its prediction but not in the bare GEMM timed (``analysis.measure.untimed_s``), so that
    meas/pred compares like with like."""
    from ..analysis.predict import added_narrow_channels_s, added_transposes_s

    untimed = [r for r in report.results if r.measured is not None and r.measured.untimed_s]
    if not untimed:
        return []
    moved = sum(added_transposes_s(r.gemm, report.hardware) for r in untimed)
    narrow = sum(added_narrow_channels_s(r.gemm, report.hardware) for r in untimed)
    many = len(untimed) > 1
    what = [f"{seconds(moved)} of cuDNN's transposes around {'them' if many else 'it'}"
            ] if moved else []
    what += [f"{seconds(narrow)} of the CUDA cores' rate for fewer than 16 input channels"
             ] if narrow else []
    layout = "NCHW " if not narrow else ""
    return [f"measured: {len(untimed)} {layout}convolution GEMM{'s' * many} timed bare: "
            f"{'their' if many else 'its'} meas/pred is against the GEMM's own prediction, "
            f"without the {' and the '.join(what)} that the predicted step adds"]


def residency_lines(report: Report) -> list[str]:
    """Whether the prediction reads the step's weights from DRAM (``analysis.residency``);
    nothing for an entry without a cache figure."""
    r = report.residency
    if r is None or r.cache_bytes is None:
        return []
    kept, cache = si(r.kept_bytes, "B"), si(r.cache_bytes, "B")
    if r.from_dram:
        return [f"weights: read from DRAM at every use, also by a GEMM that fits in the cache "
                f"(the step keeps {kept}, the last-level cache holds {cache})"]
    return [f"weights: in the cache from step to step (the step keeps {kept}, the last-level "
            f"cache holds {cache})"]


_BASIS_TEXT = {
    "flash-attention-3": "fused attention at FlashAttention-3's published H100 rates (Shah et "
                         "al. 2024) by head dim and seq",
    "flash-attention-2": "fused attention at FlashAttention-2's best published A100 share, 73% "
                         "of peak (Dao 2023; optimistic at short seqs)",
    "gemm-sustained": "fused attention at the GEMM model's sustained share of peak (no "
                      "published attention figure for this device)",
    "gemm-epilogue": "Linear biases added in their GEMM's epilogue, no kernel of their own "
                     "(cuBLASLt, as torch's CUDA addmm)",
    "strided-copy": "permuted copies at the rate torch's strided copy kernel computes offsets "
                    f"({min(STRIDED_COPY_VALUES.values()):g}-"
                    f"{max(STRIDED_COPY_VALUES.values()):g} values per SM and clock, fitted on "
                    "a lent H100), not DRAM's",
    "row-passes": "layer norms at the rate torch's row kernels pass each row through an SM "
                  "(its forward reads X twice), or over a few rows at their rounds of loads "
                  "(fitted on a lent H100), not DRAM's",
    "softmax-rows": "softmaxes at the rate torch's softmax kernel for the row's width works "
                    "through its values "
                    f"({min(v for _, v in SOFTMAX_VALUES_PER_SM_CLOCK):g}-"
                    f"{max(v for _, v in SOFTMAX_VALUES_PER_SM_CLOCK):g} per SM and clock; "
                    f"fitted on a lent H100), and past {SOFTMAX_REG_COLUMNS:,} values a row its "
                    "re-reads from DRAM once the rows it holds outgrow half the L2; their "
                    "backwards alike (the warp kernel's "
                    f"{min(v for _, v in SOFTMAX_BACKWARD_VALUES_PER_SM_CLOCK):g}-"
                    f"{max(v for _, v in SOFTMAX_BACKWARD_VALUES_PER_SM_CLOCK):g}; the "
                    "two-pass kernel's second read of the gradient)",
    "memory-efficient": "fused attention whose mask needs its gradient at torch's "
                        "memory-efficient kernel's rate ("
                        f"{EFFICIENT_TFLOPS['forward']:g} / {EFFICIENT_TFLOPS['backward']:g} "
                        "TFLOP/s forward / backward, measured on a lent H100)",
    "batch-norm-kernels": "batch norms through torch's or cuDNN's kernels for their dtype and "
                          "layout ("
                          f"{min(BATCH_NORM_VALUES_PER_SM_CLOCK.values()):g}-"
                          f"{max(BATCH_NORM_VALUES_PER_SM_CLOCK.values()):g} values per busy SM "
                          "and clock, a channel to an SM in NCHW reductions; fitted on a lent "
                          "H100), not DRAM's",
    "reduce-kernel": "sums over a matrix's rows (bias gradients) or along them (RMSNorm means) "
                     f"through torch's reduce kernel: its first load ({FIRST_S * 1e6:g} us), "
                     f"its blocks' rounds of loads ({ROUND_S * 1e6:g} us each; "
                     f"{INDEXED_ROUND_S * 1e6:g} us, and {INDEXED_VALUES_PER_SM_CLOCK:g} "
                     "values an SM-clock, where each value's offset is computed: an NCHW map's "
                     f"channels) and its last blocks' partial sums ({TAIL_S * 1e6:g} us each; "
                     "fitted on a lent H100), beside DRAM's",
    "layer-norm-kernels": "layer norm backwards as torch's two kernels: dX's stream, "
                          f"{REREAD:g}x past {REREAD_ROW_BYTES // 1024} KB rows, then the "
                          "weight gradients' blocks of 32 columns at "
                          f"{GAMMA_BETA_VALUES_PER_BLOCK_CLOCK:g} values a block-clock or their "
                          "stream (fitted on a lent H100)",
}
#: ``gemm-epilogue`` on a CPU (``analysis.cpu_ops``): a convolution's bias
_CPU_EPILOGUE_TEXT = ("convolution biases added inside their convolution, no op of their own "
                      "(oneDNN, as torch's CPU conv2d)")


def op_basis_text(report: Report) -> str:
    """How the step's other ops were predicted, in words (``analysis.gpu_ops``)."""
    constants = report.op_prediction()
    if constants is None:
        return "other ops at their roof"
    bases = {r.predicted_basis for r in distinct(report.ops)}  # copies share their basis
    if "rates_gbs" in constants:  # a CPU with the probe's op costs (analysis.cpu_ops)
        classes = sorted(b.removeprefix("calibrated: ") for b in bases if b != "gemm-epilogue")
        missing = f"; not measured: {', '.join(constants['missing'])}" if constants[
            "missing"] else ""
        fused = f"; {_CPU_EPILOGUE_TEXT}" if "gemm-epilogue" in bases else ""
        return (f"other ops calibrated here through {constants['library']} "
                f"({count(constants['threads'], 'thread')}): {seconds(constants['call_s'])} a "
                f"call plus their bytes at the measured rate of their class ({', '.join(classes)}),"
                f" none faster than its FLOPs at the peak{missing}{fused}")
    where = "calibrated here" if constants["basis"] == "calibrated" else "published"
    parts = [f"other ops at {constants['dram_fraction']:.0%} of DRAM bandwidth plus "
             f"{seconds(constants['launch_s'])} launch each ({where})"]
    parts += [text for basis, text in _BASIS_TEXT.items() if basis in bases]
    return "; ".join(parts)


def basis_sentence(hardware: HardwareSpec) -> str:
    """One line saying how ``predicted_time_s`` was made for this entry."""
    if hardware.calibration is not None and hardware.calibration.gpu_ops is not None:
        through = (f" through {library_text(hardware)}"
                   if hardware.calibration.library is not None else "")
        library = hardware.calibration.library
        again = (f"re-run `{reprobe_command(hardware)}` to time them in a CUDA graph"
                 if library is None or library.name == "torch" else
                 f"{library.name}'s probe times them so")
        timed = ("timed in a CUDA graph: the GPU's own" if hardware.calibration.gpu_ops.timing
                 == "graph" else f"timed from Python, the host's per-call cost in them: {again}")
        return (f"predicted: calibrated from the probe's measurements of this GPU{through} (GPU "
                f"GEMM model on its measured peaks and bandwidth, its shortest GEMM kernel and "
                f"per-kernel time, {timed})")
    if hardware.calibration is not None:
        return (f"predicted: calibrated from the probe's measurements of this machine through "
                f"{library_text(hardware)} (per-call overhead, small and thin GEMM efficiency, "
                f"C's write cost, cache-resident operands)")
    if hardware.origin == "measured":
        return (f"predicted: uncalibrated (this measured entry has no calibration block, probe "
                f"method < 3; re-run `{reprobe_command(hardware)}`): roofline on its "
                f"measured figures")
    fit = fit_of(hardware)
    if fit is not None:
        where = (f"{hardware.architecture} among them" if fit["architecture_in_data"] else
                 f"none of them {hardware.architecture}")
        clock = fit["clock"]
        held = (f"the SMs at {clock['ghz']:g} GHz, the clock the entry says the board holds "
                f"through a long GEMM (boost {clock['boost_ghz']:g})"
                if clock["basis"] == "sustained" else
                f"the SMs at their {clock['ghz']:g} GHz boost clock (the entry gives no "
                f"sustained clock)")
        from ..analysis.gpu_gemm import TMA_ARCHITECTURES

        stream_k = (", stream-K for Tensor-Core GEMMs"
                    if hardware.architecture in TMA_ARCHITECTURES else "")
        return (f"predicted: fitted, not measured here (GPU GEMM model: tiles, waves, "
                f"split-K{stream_k}, per-SM bandwidth, sustained peak; fitted on {fit['data']}; "
                f"{where}), {held}")
    return ("predicted: datasheet, uncalibrated (no per-call overhead is documented for a "
            "CPU: equal to the roofline time)")


def library_text(hardware: HardwareSpec) -> str:
    """What the entry's calibration was timed through, in words (``CalibrationLibrary.words``):
    ``torch 2.13.0 (MKL 2024.2, oneDNN 3.12.0; 2 threads)``; a CPU block older than calibration
    version 4 is numpy's BLAS, and says that it did not record it."""
    calibration = hardware.calibration
    library = calibration.through if calibration is not None else None
    if library is None:
        return "a library not recorded"
    if calibration is not None and calibration.library is None:
        return (f"numpy's BLAS (calibration version {calibration.version} does not record the "
                f"library; version 4 does)")
    return library.words


def calibration_warning(report: Report) -> str | None:
    """The sentence for a model that runs in torch predicted from a calibration timed through
    numpy's BLAS (``predict.library_mismatch``), or None."""
    from ..analysis.predict import library_mismatch

    if library_mismatch(report.hardware, report.network.framework) is None:
        return None
    return (f"the predicted times are calibrated through {library_text(report.hardware)}, "
            f"while this model runs in {report.network.framework}, whose CPU GEMMs can run "
            f"1.0-1.7x apart from numpy's on the same shapes: `roofline probe --library "
            f"{report.network.framework} --save NAME` calibrates through "
            f"{report.network.framework}")


def tf32_warning(network: Network, hardware: HardwareSpec) -> str | None:
    """On a GPU with a TF32 peak, the sentence for a model.yaml's (or config.json's) fp32
    convolutions: priced at the fp32 peak, as written, while PyTorch runs fp32 convolutions in
    TF32 by default (``torch.backends.cudnn.allow_tf32``), as a captured module is priced
    (``GemmShape.tf32``); else None. ResNet-50's training step on an A100 reads 18% memory-bound
    at the fp32 peak and 74% in TF32: the verdict turns on it."""
    from ..model.layers.conv2d import Conv2d

    if (hardware.kind != "gpu" or "tf32" not in hardware.peak_tflops
            or network.captured_batch is not None or network.dtype != "fp32"):
        return None
    convs = sum(run.count for run in network.layer_runs if isinstance(run.layer, Conv2d))
    if not convs:
        return None
    peaks = hardware.peak_tflops
    return (f"{convs} convolution{'s' if convs > 1 else ''} priced in fp32 at the "
            f"{peaks['fp32']:g} TFLOP/s fp32 peak, as the model states; PyTorch runs fp32 "
            f"convolutions in TF32 on this GPU by default (torch.backends.cudnn.allow_tf32), at "
            f"the {peaks['tf32']:g} TFLOP/s TF32 peak, as a captured module is priced: dtype "
            f"tf32 (--dtype tf32) prices them so")


#: A lent H100 SXM5's ResNet-50 bf16 training step at batch 64 (torch 2.11, eager;
#: benchmarks/data/h100_live_steps.json and _variants.json, README "Whole eager steps"): best
#: time and the datasheet entry's prediction (cuDNN's transposes, ``analysis.gpu_layout``, and
#: torch's NCHW batch-norm kernels, ``analysis.gpu_batch_norm``, counted), the time it spent in
#: those transposes, and the kernels' time in channels_last against its prediction.
NCHW_EVIDENCE = {"step_ms": 30.9, "predicted_ms": 25.3, "transposes_ms": 3.5,
                 "channels_last_kernels_ms": 17.0, "channels_last_predicted_ms": 15.7}
#: The same for 3-D maps: the lent H100's R3D-18 bf16 training step at batch 8 of 16 x 112 x 112
#: clips (torch 2.11, cuDNN 9.19; benchmarks/data/h100_live_video_steps.json, README "3-D
#: convolutions, and stems of 3 channels", ``benchmarks/bench_gpu_video.py``'s last table).
NCDHW_EVIDENCE = {"step_ms": 17.41, "predicted_ms": 13.35, "transposes_ms": 2.48,
                  "channels_last_kernels_ms": 15.0, "channels_last_predicted_ms": 10.59}


def layout_warning(report: Report) -> str | None:
    """On a GPU, the sentence for a captured module whose 16-bit convolutions ran on NCHW
    (NCDHW) tensors, or whose fp32 ones cuDNN transposes around in TF32: what those transposes
    add to the prediction (``analysis.gpu_layout``), that torch's batch norm runs slower kernels
    on NCHW maps where the step has one (``_torch_nchw_batch_norm``), and what channels_last
    saves, in the words of the maps' dimensions (a 3-D step's NCDHW, 1 x 1 x 1 filters and
    R3D-18's measurement, ``NCDHW_EVIDENCE``), qualified where the step has depthwise or grouped
    3-D convolutions by what channels_last_3d did to them on a lent H100 (``output.layout3d``:
    keep depthwise ones NCDHW, time grouped ones both ways); else None, also where the 16-bit
    ones are all convolutions cuDNN does not transpose around (1 x 1 stride-1, depthwise, and
    grouped but 3-D backward ones) and no such batch norm runs: the sentence would warn of
    0 s."""
    from ..analysis.gpu_layout import transpose_s
    from .layout3d import grouped_3d_words

    nchw = report.network.nchw_convs
    if report.hardware.kind != "gpu" or not (nchw or any(
            r.gemm.transposed for r in distinct(report.results))):
        return None
    moved = float_total(report.results, lambda r: transpose_s(r.gemm, report.hardware))
    # 16-bit convolutions on NCHW maps, or (fp32 in TF32) those cuDNN transposes around
    n = nchw or int_total(report.results, lambda r: int(
        r.gemm.pass_ == "forward" and transpose_s(r.gemm, report.hardware) > 0))
    batch_norm = _torch_nchw_batch_norm(report)
    if not n or not (moved or batch_norm):
        return None
    formats = _channels_last_formats(report)
    only_3d = formats == ["channels_last_3d"]
    e = NCDHW_EVIDENCE if only_3d else NCHW_EVIDENCE
    measured_in = "channels_last_3d" if only_3d else "channels_last"
    dtype = "fp32 (TF32)" if report.network.dtype == "fp32" else report.network.dtype
    evidence = (f"a lent H100's {'R3D-18' if only_3d else 'ResNet-50'} bf16 training step at "
                f"batch {8 if only_3d else 64} took {e['step_ms']:g} ms against "
                f"{e['predicted_ms']:g} predicted, {e['transposes_ms']:g} ms of it in "
                f"transposes; in {measured_in} its kernels took "
                f"{e['channels_last_kernels_ms']:g} ms against "
                f"{e['channels_last_predicted_ms']:g}")
    maps, last = (" and ".join(table[f] for f in formats) for table in (NCHW, NHWC))
    norms = (f", and batch norm on {maps} runs torch's slower kernels, counted too "
             f"({evidence})" if batch_norm else f"; {evidence}")
    # R3D-18 has no 1 x 1 x 1 stride-1 convolution: the 2-D rule, and ResNet-50's small maps
    skipped = ("not around 1 x 1 x 1 stride-1 ones, as in 2-D" if only_3d else
               "not around 1 x 1 stride-1 ones, though at 14 x 14 and less it does around some")
    # depthwise and grouped 3-D ones: what channels_last_3d did to them (output.layout3d)
    grouped = grouped_3d_words(report) if "channels_last_3d" in formats else None
    return (f"{n} convolution{'s' if n > 1 else ''} ran in {dtype} on {maps} tensors "
            f"(torch's default memory format): cuDNN's Tensor-Core convolutions take {last} "
            f"and transpose {maps} around them ({seconds(moved)} of the predicted step; "
            f"{skipped}){norms}: "
            f"{' or '.join(f'module.to(memory_format=torch.{f})' for f in formats)}, and the "
            f"input likewise, runs them in {last}" + (f", but {grouped}" if grouped else ""))


#: torch's channels-last memory formats, the layout each gives a convolution's maps and the one
#: torch's default gives them
NHWC = {"channels_last": "NHWC", "channels_last_3d": "NDHWC"}
NCHW = {"channels_last": "NCHW", "channels_last_3d": "NCDHW"}


def _channels_last_formats(report: Report) -> list[str]:
    """The channels-last memory formats for the convolutions of ``report``: ``channels_last``
    for 2-D ones, ``channels_last_3d`` for 3-D ones (a role of their filter's T x R x S axes),
    both when the step has both."""
    three = {"T x R x S" in roles for roles in (" ".join(r.gemm.roles)
                                                 for r in distinct(report.results))
             if "R x S" in roles}
    return [f for f, is_3d in (("channels_last", False), ("channels_last_3d", True))
            if is_3d in three] or ["channels_last"]


def _torch_nchw_batch_norm(report: Report) -> bool:
    """Whether the step has a batch norm that runs torch's NCHW kernels (a 16-bit one on an NCHW
    map: ``analysis.gpu_batch_norm``), slower than its channels-last ones."""
    for o in report.ops:
        kernels = batch_norm_kernels(o.op, o.dtype)
        if kernels is not None and any(k.startswith("torch-nchw") for k in kernels[0]):
            return True
    return False


def shared_machine_warning(report: Report) -> str | None:
    """The sentence for GEMMs ``--measure`` timed while other programs kept more than
    ``kernels.load.BUSY_CPUS`` CPUs busy (as the probe warns of its own figures); else None."""
    from ..kernels.load import BUSY_CPUS

    load = report.measured_other_load_cpus
    if load is None or load <= BUSY_CPUS:
        return None
    return (f"other programs kept {load:.2f} CPUs busy on average while --measure timed the "
            f"GEMMs: the measured times are a shared machine's (a multi-threaded call waits for "
            f"the thread another program holds); rerun when the machine is idle")


def reprobe_command(hardware: HardwareSpec) -> str:
    """The probe command that measures measured entry ``hardware`` again in its place: its own
    name (a user's ``mybox``, not ``local``), through the library its calibration was timed
    through (a CPU entry calibrated through torch keeps ``--library torch``, or the new entry
    would predict a torch model from numpy's BLAS), ``--force`` to replace it. One place for
    every sentence that tells a user to re-probe an entry."""
    through = hardware.calibration.through if hardware.calibration is not None else None
    torch = hardware.kind == "cpu" and through is not None and through.name == "torch"
    return f"roofline probe{' --library torch' if torch else ''} --save {hardware.name} --force"


def forced_warning(hardware: HardwareSpec) -> str | None:
    """The sentence for a measured entry saved past the probe's own checks
    (``HardwareSpec.forced_past``): its figures, and every prediction from them, are a
    disturbed run's; else None."""
    reasons = hardware.forced_past
    if not reasons:
        return None
    return (f"entry {hardware.name} was saved with --force past the probe's own checks: "
            f"{'; '.join(reasons)}; its figures, and the predictions from them, may be a "
            f"disturbed run's: `{reprobe_command(hardware)}` on an idle machine replaces "
            f"them")


def beats_roof_notes(report: Report) -> list[str]:
    """One sentence per GEMM that ran faster than its roof (``analysis.measure.beats_roof``)."""
    from ..analysis.measure import beats_roof

    again = reprobe_command(report.hardware)
    return [f"{name}: measured {eff:.2f}x its roof: the ceiling is too low (rerun `{again}`) "
            f"or the operands sat in a cache the DRAM roof does not count"
            for name, eff in beats_roof(report)]
