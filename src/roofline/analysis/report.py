"""Analyze a network's GEMMs and ops against one hardware entry: the Report behind every
output."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import InputError, UnsupportedDtypeError, described
from ..files.fields import positive_int
from ..hardware.catalog import hardware_spec
from ..hardware.spec import HardwareSpec
from ..model.gemm import DIMENSIONS, Gemm
from ..model.network import Network
from ..model.ops import Op
from ..model.repeats import float_total, int_total, named
from ..roof import attainable_flops_per_s, bound, ridge_point, roofline_time_s
from .alignment import AlignmentNote, alignment_notes
from .batch import BatchAdvice, batch_advice
from .cpu_ops import cpu_ops_of, predict_cpu_op
from .gpu_gemm import runs_stream_k
from .gpu_ops import op_constants, op_sources, predict_op
from .memory import Memory, memory_of
from .predict import basis_of, fit_of, library_of, predict_gemm
from .quantization import Quantization, quantization_of
from .recompute import recomputation
from .residency import Residency, residency_of
from .step import StepVerdict, step_verdict

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .generation import Generation
    from .measure import Measurement
    from .scaling import Scaling
    from .serving_dp import DataParallel
    from .serving_pp import PipelineParallel
    from .serving_tp import TensorParallel


class Totals(TypedDict):
    """A step's totals (the JSON ``totals`` object): FLOPs and bytes of GEMMs and ops, the
    roofline time, the share of it that is memory-bound, the GEMMs' predicted time; and
    recomputation's part (``analysis.recompute``): the forward GEMMs and ops the backward pass
    runs again under ``recompute`` selective or full, in ``time_s`` and ``predicted_time_s``,
    not in ``flops``, ``bytes``, ``gemm_*`` or ``op_*`` (each item once: the model's)."""

    flops: int  # the model's: each GEMM and op once (MFU's numerator)
    bytes: int
    time_s: float  # the GEMMs', the ops' and the recomputation's roofline times
    memory_bound_time_fraction: float
    gemm_flops: int
    gemm_time_s: float
    predicted_gemm_time_s: float
    predicted_time_s: float  # the GEMMs', the ops' (analysis.gpu_ops), the recomputation's
    predicted_op_time_s: float
    op_time_s: float
    recompute_flops: int  # run again in the backward pass: flops + this is HFU's numerator
    recompute_gemm_flops: int
    recompute_time_s: float
    predicted_recompute_time_s: float
    parameters: int
    active_parameters: int  # all but a mixture of experts' unrouted experts


class ServedTotals(Totals, total=False):
    """A tensor-parallel shard's totals (``analyze --tp``): its exposed communication each
    step, in ``time_s`` and ``predicted_time_s`` (``analysis.serving_tp``); over a pipeline
    (``analyze --pp``), the step's hand-offs between stages, in them too
    (``analysis.serving_pp``); over data-parallel ranks (``analyze --dp``), the experts'
    dispatch and combine, in them too (``analysis.serving_dp``). Each pair only where its
    parallelism is above 1."""

    tp_comm_time_s: float
    predicted_tp_comm_time_s: float
    pp_comm_time_s: float
    predicted_pp_comm_time_s: float
    dp_comm_time_s: float
    predicted_dp_comm_time_s: float


#: What a training step may leave out (``Report.not_counted``): the optimizer update when the
#: optimizer is none, the loss and its gradient (never modelled), dropout when the blocks'
#: rate is 0 (a config.json gives none), and a captured module's recomputation (``recompute``
#: selective or full changes neither its time nor its memory: its step is what its run
#: recorded; a model file's is timed, ``analysis.recompute``).
NOT_COUNTED = ("optimizer", "loss", "dropout", "recomputation")


@dataclass(frozen=True, slots=True)  # no per-result __dict__: 300,000 of them in a deep MLP
class GemmResult:
    """One GEMM placed on the roofline, with its alignment warnings and batch advice."""

    gemm: Gemm
    bound: str
    attainable_flops_per_s: float
    time_s: float
    aligned: bool
    min_compute_bound_batch: int | None
    alignment: tuple[AlignmentNote, ...] = ()
    quantization: Quantization | None = None
    batch_advice: BatchAdvice | None = None  # memory-bound GEMMs: what a larger batch does
    predicted_time_s: float = 0.0  # analysis.predict: the time to expect (set by analyze_gemm)
    measured: Measurement | None = None  # with `analyze --measure`
    # the largest batch whose step fits in memory, where known: what a batch padded for
    # alignment is held to (``output.advice.alignment_text``)
    max_batch: int | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        """Alignment misses and tile/wave quantization, as sentences (``output.advice``)."""
        from ..output.advice import gemm_warnings

        return gemm_warnings(self)

    @property
    def advice(self) -> tuple[str, ...]:
        """The 128-byte tier and batch advice, as sentences (``output.advice``)."""
        from ..output.advice import gemm_advice

        return gemm_advice(self)

    def to_dict(self) -> dict[str, Any]:
        g = self.gemm
        extra = self.measured.to_dict(self) if self.measured is not None else {}
        return extra | {
            "name": g.name, "layer": g.layer, "pass": g.pass_,
            "m": g.m, "n": g.n, "k": g.k, "batch_count": g.batch_count, "dtype": g.dtype,
            "c_dtype": g.c_dtype, "c_read": g.c_read, "bytes_by_operand": g.bytes_by_operand,
            # null for a view of other tensors (a convolution's im2col) that says no layout
            "operand_rows": (None if g.rows is None and g.tensors is not None else
                             dict(zip("abc", (DIMENSIONS[i] for i in g.operand_rows)))),
            "b_dtype": g.stored_b, "group_size": g.group_size or None,
            "dequant_flops": g.dequant_flops,
            "flops": g.flops, "bytes": g.bytes, "intensity": g.intensity,
            "bound": self.bound,
            "attainable_tflops": self.attainable_flops_per_s / 1e12,
            "time_s": self.time_s,
            "predicted_time_s": self.predicted_time_s,
            "aligned": self.aligned,
            "warnings": list(self.warnings),  # the sentences: output.advice
            "advice": list(self.advice),
            "min_compute_bound_batch": self.min_compute_bound_batch,
            "alignment": [note.to_dict() for note in self.alignment],
            "quantization": self.quantization.to_dict() if self.quantization else None,
        } | extra


@dataclass(frozen=True, slots=True)
class OpResult:
    """One non-GEMM op placed on the same roofline, and the time to expect for it
    (``analysis.gpu_ops``: its ``predicted_basis``, one of ``gpu_ops.OP_BASES``; on a CPU with
    the probe's op costs ``analysis.cpu_ops``: ``calibrated: <class>``)."""

    op: Op
    bound: str
    attainable_flops_per_s: float
    time_s: float
    predicted_time_s: float = 0.0
    predicted_basis: str = "roofline"
    dtype: str = ""  # the dtype its values are in: the report's, or the op's own (Op.dtype)

    def to_dict(self) -> dict[str, Any]:
        o = self.op
        return {"name": o.name, "layer": o.layer, "pass": o.pass_, "kind": o.kind,
                "dtype": self.dtype,
                "flops": o.flops, "bytes": o.bytes, "intensity": o.intensity,
                "bound": self.bound, "attainable_tflops": self.attainable_flops_per_s / 1e12,
                "time_s": self.time_s, "predicted_time_s": self.predicted_time_s,
                "predicted_basis": self.predicted_basis}


@dataclass(frozen=True)
class Report:
    """A network analyzed on one device: per-GEMM and per-op results and the step's totals."""

    network: Network
    hardware: HardwareSpec
    ridge: float
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    results: Sequence[GemmResult]  # a repeat's copies analyzed once (model.repeats.Numbered)
    ops: Sequence[OpResult] = ()
    quantization: bool = False  # tile and wave losses folded into compute-bound GEMM times
    scaling: Scaling | None = None  # streamed input, data parallelism (when asked for)
    memory: Memory | None = None  # the step's memory against the device's capacity
    generation: Generation | None = None  # with a prompt and an output length
    residency: Residency | None = None  # whether the step's weights stay in the cache
    #: served over several GPUs (``analyze --tp``): this is one GPU's shard, and the step's
    #: time holds the group's exposed communication (``analysis.serving_tp``)
    tensor_parallel: TensorParallel | None = None
    #: served over a pipeline of stages (``analyze --pp``): every GEMM and op above is run by
    #: one GPU of its stage, the step's time one batch's through every stage and the hand-offs
    #: between them, the memory the most loaded stage's (``analysis.serving_pp``)
    pipeline_parallel: PipelineParallel | None = None
    #: served over data-parallel ranks (``analyze --dp``): every GEMM and op above is one GPU's
    #: of one rank, running that rank's batch / dp sequences and its share of the experts; the
    #: step's time holds the experts' exposed dispatch and combine (``analysis.serving_dp``)
    data_parallel: DataParallel | None = None
    #: other programs' load (CPUs, /proc/stat) while ``--measure`` timed the GEMMs; None: not
    #: measured, or not readable here
    measured_other_load_cpus: float | None = None

    @property
    def dtype(self) -> str:
        return self.network.operand_dtype

    @property
    def batch(self) -> int:
        return self.network.settled()[0]

    @cached_property
    def totals(self) -> Totals:  # computed once: a deep step sums many items
        results, ops = self.results, self.ops
        gemm_s = float_total(results, _time)
        op_s = float_total(ops, _time)
        memory_s = (float_total(results, _time, _memory_bound)
                    + float_total(ops, _time, _memory_bound))
        gemm_flops = int_total(results, lambda r: r.gemm.flops)
        predicted_gemm_s = float_total(results, lambda r: r.predicted_time_s)
        predicted_op_s = float_total(ops, lambda r: r.predicted_time_s)
        again = recomputation(self)  # the forward run again in the backward pass
        tp, pp = self.tensor_parallel, self.pipeline_parallel
        tp_comm, predicted_tp = (tp.step.roof_s, tp.step.predicted_s) if tp else (0.0, 0.0)
        pp_comm, predicted_pp = ((pp.step.transfer_s, pp.step.predicted_transfer_s) if pp
                                 else (0.0, 0.0))
        dp = self.data_parallel
        dp_comm, predicted_dp = (dp.step.roof_s, dp.step.predicted_s) if dp else (0.0, 0.0)
        comm = tp_comm + pp_comm + dp_comm
        predicted_comm = predicted_tp + predicted_pp + predicted_dp
        totals: Totals = {
            # with the GEMMs' dequantization, as an fp8 KV cache's is in its attention op's
            "flops": gemm_flops + int_total(results, lambda r: r.gemm.dequant_flops)
            + int_total(ops, lambda r: r.op.flops),
            "bytes": int_total(results, lambda r: r.gemm.bytes) + int_total(
                ops, lambda r: r.op.bytes),
            "time_s": gemm_s + op_s + again.time_s + comm,
            "memory_bound_time_fraction": (memory_s + again.memory_bound_s)
            / (gemm_s + op_s + again.time_s),
            "gemm_flops": gemm_flops,
            "gemm_time_s": gemm_s,
            "predicted_gemm_time_s": predicted_gemm_s,
            "predicted_time_s": predicted_gemm_s + predicted_op_s + again.predicted_time_s
            + predicted_comm,
            "predicted_op_time_s": predicted_op_s,
            "op_time_s": op_s,
            "recompute_flops": again.flops,
            "recompute_gemm_flops": again.gemm_flops,
            "recompute_time_s": again.time_s,
            "predicted_recompute_time_s": again.predicted_time_s,
            "parameters": self.network.parameters,
            "active_parameters": self.network.active_parameters,
        }
        if tp is None and pp is None and dp is None:
            return totals
        served = ServedTotals(**totals)
        if tp is not None:
            served |= {"tp_comm_time_s": tp_comm, "predicted_tp_comm_time_s": predicted_tp}
        if pp is not None:
            served |= {"pp_comm_time_s": pp_comm, "predicted_pp_comm_time_s": predicted_pp}
        if dp is not None:
            served |= {"dp_comm_time_s": dp_comm, "predicted_dp_comm_time_s": predicted_dp}
        return served

    @cached_property
    def step(self) -> StepVerdict:
        """The whole step's verdict: the smallest batch at which it turns compute-bound, or
        never and why (``analysis.step``); computed when first read."""
        return step_verdict(self.network, self.hardware,
                            self.memory.max_batch if self.memory else None)

    def not_counted(self) -> tuple[str, ...]:
        """What this step leaves out (of ``NOT_COUNTED``), so that no reader takes the step
        for more than it is; nothing for inference. The loss is left out but where a captured
        module computed it (``Network.captured_loss``); recomputation only where the module is
        a capture (a model file's is timed: ``analysis.recompute``)."""
        net = self.network
        if net.mode != "train":
            return ()
        no_dropout = any(getattr(run.layer, "dropout", None) == 0 for run in net.layer_runs)
        left = {"optimizer": net.optimizer == "none", "loss": not net.captured_loss,
                "dropout": no_dropout,
                "recomputation": net.recompute != "none" and net.captured_batch is not None}
        return tuple(key for key in NOT_COUNTED if left[key])

    def op_prediction(self) -> dict[str, Any] | None:
        """How the ops were predicted on this device (``gpu_ops.op_sources``, on a CPU with the
        probe's op costs ``cpu_ops.op_sources``); None on a CPU without them, where an op's
        prediction is its roofline time."""
        cpu = cpu_ops_of(self.hardware)
        if cpu is not None:
            from .cpu_ops import op_sources as cpu_sources

            return cpu_sources(cpu)
        constants = op_constants(self.hardware)
        return op_sources(constants) if constants is not None else None

    @property
    def warnings(self) -> tuple[str, ...]:
        """Warnings about the whole report, as sentences (``output.advice.report_warnings``):
        a model that runs in torch predicted from a calibration timed through numpy's BLAS."""
        from ..output.advice import report_warnings

        return report_warnings(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of docs/design.md (plus peak and bandwidth used)."""
        return {
            "model": self.network.name,
            "hardware": self.hardware.name,
            "dtype": self.dtype,
            "output_dtype": self.network.c_dtype,
            "grad_accumulation": self.network.grad_accumulation,
            "weights": self.network.weight_dtype,
            "activations": self.network.activation_dtype,
            "kv_cache": self.network.kv_dtype,
            "group_size": self.network.group or None,
            "logits": self.network.logits or "all",
            "batch": self.network.batch,
            "seq": self.network.seq,
            "mode": self.network.mode,
            "phase": self.network.step_phase,
            "optimizer": self.network.optimizer,
            # the recomputation the step runs under (none outside training, whatever a file
            # says: an inference step keeps nothing for a backward pass)
            "recompute": self.network.step_recompute,
            "ridge": self.ridge,
            "peak_basis": "dense",
            "peak_tflops": self.peak_flops_per_s / 1e12,
            "bandwidth_gbs": self.bandwidth_bytes_per_s / 1e9,
            "gemms": [own | rest for own, rest in gemm_objects(self.results)],
            "ops": [r.to_dict() for r in self.ops],
            "totals": self.totals,
            "quantization_in_time": self.quantization,
            "prediction_basis": basis_of(self.hardware),
            "prediction_fit": fit_of(self.hardware),
            "calibration_library": library_of(self.hardware),
            "op_prediction": self.op_prediction(),
            "residency": self.residency.to_dict() if self.residency else None,
            "not_counted": list(self.not_counted()),
            "step": self.step.to_dict(),
            "uncosted_ops": list(self.network.uncosted),
            "warnings": list(self.warnings),
        } | ({"measured_other_load_cpus": self.measured_other_load_cpus}
             if self.measured_other_load_cpus is not None else {}) | (
            {"memory": self.memory.to_dict()} if self.memory else {}) | (
            {"generation": self.generation.to_dict()} if self.generation else {}) | (
            {"tensor_parallel": self.tensor_parallel.to_dict()} if self.tensor_parallel
            else {}) | (
            {"pipeline_parallel": self.pipeline_parallel.to_dict()} if self.pipeline_parallel
            else {}) | (
            {"data_parallel_ranks": self.data_parallel.to_dict()} if self.data_parallel
            else {}) | (
            self.scaling.to_dict() if self.scaling else {})

    def __repr__(self) -> str:
        """One line (the dataclass's own repr printed every result: 6 KB for Llama-2-7B)."""
        from ..units import seconds

        net, totals = self.network, self.totals
        seq = f", seq {net.seq}" if net.seq is not None else ""
        return (f"<Report {net.name} on {self.hardware.name}: {self.dtype}, batch {net.batch}"
                f"{seq}, {net.mode}; step {seconds(totals['time_s'])} roof, "
                f"{seconds(totals['predicted_time_s'])} predicted>")

    def _repr_html_(self) -> str:
        """Jupyter: the HTML report's block (chart, sortable table, advice, sources)."""
        from ..output.html import report_fragment

        return report_fragment(self)

    def plot(self, ax: Axes | None = None, **options: Any) -> Axes:
        """Draw the roofline chart (``roofline.plot.plot_roofline``) and return the Axes.

        Without ``ax`` the chart gets a figure of its own, which Jupyter shows inline as
        ``report.plot().figure``; pyplot is never touched.
        """
        from ..plot import plot_roofline

        return plot_roofline(self, ax=ax, **options)


def gemm_objects(results: Sequence[GemmResult]) -> Iterator[tuple[dict[str, Any],
                                                                   dict[str, Any]]]:
    """Each GEMM's JSON object as (its own keys, the rest): the name and the layer, then the
    rest, which is a function of the GEMM's shape (``Gemm.shape_key``) and is made once per
    shape and shared by the GEMMs of that shape (a deep model has 100,000s of GEMMs and few
    shapes). A measured GEMM's object (its measurement first) is its own: ``({}, object)``."""
    tails: dict[int, dict[str, Any]] = {}  # by the result read: one per shape in a deep model
    shapes: dict[tuple[object, ...], dict[str, Any]] = {}
    for name, layer, copy, r in named(results, gemm_of):
        if r.measured is not None:
            yield {}, _rename_result(r, name, layer, copy).to_dict()
            continue
        tail = tails.get(id(r))
        if tail is None:
            tail = shapes.get(r.gemm.shape_key)
            if tail is None:
                tail = shapes[r.gemm.shape_key] = r.to_dict()
                del tail["name"], tail["layer"]
            tails[id(r)] = tail
        yield {"name": name, "layer": layer}, tail


def gemm_of(result: GemmResult) -> Gemm:
    """A result's GEMM: the key ``model.repeats.named`` reads a result list's names by."""
    return result.gemm


def _time(result: Any) -> float:
    return float(result.time_s)


def _memory_bound(result: Any) -> bool:
    return bool(result.bound == "memory")


def _rename_result(result: GemmResult, name: str, layer: str, copy: int) -> GemmResult:
    """A copy's result: the stored copy's, renamed."""
    return _as_gemm(result, result.gemm.renamed(name, layer, copy))


def _as_gemm(result: GemmResult, gemm: Gemm) -> GemmResult:
    """``result``, the analysis of a GEMM of the same shape, as ``gemm``'s."""
    return GemmResult(gemm, result.bound, result.attainable_flops_per_s, result.time_s,
                      result.aligned, result.min_compute_bound_batch, result.alignment,
                      result.quantization, result.batch_advice, result.predicted_time_s,
                      result.measured, result.max_batch)


def _rename_op(result: OpResult, name: str, layer: str, copy: int) -> OpResult:
    """A copy's result: the stored copy's, renamed (``Op.renamed``, not ``replace``: an
    --expand of a deep model renames thousands)."""
    return OpResult(result.op.renamed(name, layer, copy), result.bound,
                    result.attainable_flops_per_s, result.time_s, result.predicted_time_s,
                    result.predicted_basis, result.dtype)


def _argument_error(name: str, problem: str) -> InputError:
    """A library argument's problem, named by it (``max_batch: expected ...``)."""
    return InputError(name, "", problem)


def analyze_gemm(gemm: Gemm, hardware: HardwareSpec | str | os.PathLike[str],
                 quantization: bool = False,
                 max_batch: int | None = None, weights_from_dram: bool = False,
                 captured_batch: int | None = None, generation: bool = False) -> GemmResult:
    """Place one GEMM on ``hardware``'s roofline for the GEMM's dtype, with its alignment
    notes, its tile/wave quantization and, when memory-bound, what a larger batch does (data;
    ``output.advice`` turns them into the ``warnings`` and ``advice`` sentences), marked when
    that batch is above ``max_batch``, the largest whose step (with ``generation``, whose whole
    generation) fits in memory, and not judged
    for a GEMM of a module captured at ``captured_batch`` (``batch.batch_advice``); with
    ``weights_from_dram`` its kept operands are read from DRAM even when it fits in the cache
    (``analysis.residency``). With
    ``quantization`` a compute-bound GEMM's time is divided by its tile/wave efficiency (after
    split-K when chosen), and is no shorter than its bytes and split-K's FP32 partial sums
    (``SplitK.extra_bytes``) over the bandwidth; memory-bound times are set by bandwidth.
    Public: ``gemm`` is checked to be a Gemm (a shape's three numbers are ``gemm_report``'s),
    ``max_batch`` and ``captured_batch`` to be integers (``files.fields.positive_int``: numpy's
    too; ``max_batch`` 0 when not even batch 1 fits) and ``hardware`` is read as every call
    reads it (``hardware_spec``: a name or a path too).
    """
    if not isinstance(gemm, Gemm):
        raise InputError("gemm", "", f"expected a Gemm, got {described(gemm)} (a shape M, N, "
                                     f"K: gemm_report(m, n, k, hardware))")
    if max_batch is not None:
        max_batch = positive_int(max_batch, _argument_error, "max_batch", minimum=0)
    if captured_batch is not None:
        captured_batch = positive_int(captured_batch, _argument_error, "captured_batch")
    hardware = hardware_spec(hardware)
    peak = hardware.peak_flops_per_s(gemm.dtype)
    bandwidth = hardware.bandwidth_bytes_per_s
    ridge = ridge_point(peak, bandwidth)
    # the work on the roof: the GEMM's FLOPs and, for a stored B narrower than the math,
    # its dequantization (Gemm.work); time = work / attainable
    work = gemm.work
    attainable = attainable_flops_per_s(gemm.work_intensity, peak, bandwidth)
    which = bound(gemm.work_intensity, ridge)
    rule = hardware.alignment.get(gemm.dtype)
    notes = tuple(alignment_notes(gemm, rule))
    aligned = all(n.tier == "advice" for n in notes)
    # the nearest better shape on the multiple that runs best: its own alignment advice silent
    tiles = quantization_of(gemm, hardware.sms, hardware.tiles, rule.preferred if rule else 8,
                            runs_stream_k(hardware, gemm.dtype))
    partials = 0.0  # split-K's FP32 partial sums, written and read back, when they are paid
    if which == "compute" and tiles is not None and quantization:
        attainable *= tiles.effective  # memory-bound: bandwidth binds, not tile slots
        partials = tiles.split_k.extra_bytes / bandwidth if tiles.split_k else 0.0
    more = (batch_advice(gemm, ridge, rule, max_batch, captured_batch, generation)
            if which == "memory" else None)
    predicted = predict_gemm(gemm, hardware, tiles, weights_from_dram)
    # work / attainable: the roofline time (roof.roofline_time_s), less any quantization loss,
    # and no shorter than the traffic split-K adds to the GEMM's bytes; the rate reported is
    # the GEMM's own FLOPs over that time
    time = max(work / attainable, gemm.bytes / bandwidth + partials)
    rate = gemm.flops / time if gemm.dequant_flops or partials else attainable
    return GemmResult(gemm, which, rate, time, aligned,
                      more.batch if more else None, notes, tiles, more, predicted.time_s,
                      max_batch=max_batch)


def analyze_op(op: Op, hardware: HardwareSpec, dtype: str) -> OpResult:
    """Place one op on the roofline of the report's ``dtype``, or of its own where a captured op
    ran in another (``Op.dtype``: an upcast the model's code makes, on the device's peak for
    it where the entry quotes one), ops being almost all memory-bound, and predict its time: on
    a CPU with the probe's op costs ``analysis.cpu_ops``, else ``analysis.gpu_ops`` (a GPU's
    model, or the roofline time)."""
    dtype, math = op.dtype or dtype, dtype
    peak = hardware.peak_flops_per_s(dtype if dtype in hardware.peak_tflops else math)
    bandwidth = hardware.bandwidth_bytes_per_s
    attainable = attainable_flops_per_s(op.intensity, peak, bandwidth)
    which = bound(op.intensity, ridge_point(peak, bandwidth))
    cpu = cpu_ops_of(hardware)
    predicted = (predict_cpu_op(op, cpu, dtype, peak, hardware.llc_mb * 2**20
                                if hardware.llc_mb else None) if cpu is not None else
                 predict_op(op, hardware, dtype, peak, bandwidth))
    return OpResult(op, which, attainable, roofline_time_s(op.flops, op.bytes, peak, bandwidth),
                    predicted.time_s, predicted.basis, dtype)


def _check_activations(network: Network, hardware: HardwareSpec) -> None:
    """GEMMs in activations other than the model's dtype need the device's peak for them."""
    act = network.activation_dtype
    if act not in hardware.peak_tflops:
        raise UnsupportedDtypeError(
            f"{hardware.name} cannot run {act} activations: its entry has no {act} peak (it "
            f"lists: {', '.join(hardware.dtypes)})")


def analyze(network: Network, hardware: HardwareSpec | str | os.PathLike[str],
            quantization: bool = False, max_batch: int | None = None,
            memory: Memory | None = None) -> Report:
    """Every GEMM and op of one training (or inference) step of ``network`` on ``hardware``;
    ``quantization`` folds tile and wave losses into compute-bound GEMM times. ``max_batch``:
    the largest batch that fits, where the caller knows a tighter one than this step's own
    (a generation: the smaller of its prefill's and its last decode step's; the batch advice
    then says it is the whole generation's). ``memory``: what one GPU holds where the caller
    knows it better than this network's own (a pipeline's most loaded stage,
    ``analysis.serving_pp``): the residency and the fitting batch are judged by it. Public:
    ``network`` is checked to be a Network (a model file's path is ``analyze_model``'s) and
    ``hardware`` is read as every call reads it (``hardware_spec``: a name or a path too)."""
    if not isinstance(network, Network):
        path = isinstance(network, (str, os.PathLike))
        raise InputError("network", "", f"expected a Network, got {described(network)}"
                                        + (" (a model file's path: analyze_model(path, "
                                           "hardware))" if path else ""))
    hardware = hardware_spec(hardware)
    network.check()
    peak = hardware.peak_flops_per_s(network.operand_dtype)
    _check_activations(network, hardware)
    bandwidth = hardware.bandwidth_bytes_per_s
    gemms, ops = network.expand()
    memory = memory_of(network, hardware) if memory is None else memory
    residency = residency_of(memory, hardware)
    fits = memory.max_batch if max_batch is None else max_batch
    captured = network.captured_batch  # a captured module's GEMMs: no batch judged
    # a repeat's copies are analyzed once: the results of its first copy stand for the rest;
    # and GEMMs of one shape (Gemm.shape_key) once: a deep model has few distinct shapes
    seen: dict[tuple[object, ...], GemmResult] = {}

    tf32 = "tf32" in hardware.peak_tflops and hardware.kind == "gpu"

    def place(gemm: Gemm) -> GemmResult:
        if gemm.tf32 and tf32:  # fp32 that torch runs in TF32 on this GPU (GemmShape.tf32)
            gemm = replace(gemm, dtype="tf32")
        key = gemm.shape_key
        found = seen.get(key)
        if found is None:
            found = seen[key] = analyze_gemm(gemm, hardware, quantization, fits,
                                             residency.from_dram, captured,
                                             max_batch is not None)
            return found
        return _as_gemm(found, gemm)

    results = gemms.map(place, _rename_result, lambda r: r.gemm.layer)
    op_results = ops.map(lambda op: analyze_op(op, hardware, network.operand_dtype),
                         _rename_op, lambda r: r.op.layer)
    return Report(network, hardware, ridge_point(peak, bandwidth), peak, bandwidth, results,
                  op_results, quantization, memory=memory, residency=residency)
