"""What-if questions: one GEMM shape, one model on several devices, one model over batches.

- ``gemm_report(m, n, k, hardware)``: a bare shape analyzed as the forward GEMM of a linear
  layer (in = K, out = N) at batch M, so batch advice is about M: the report says so.
- ``compare(model, [A, B, ...])``: per-GEMM and whole-step time on each device, the speedup
  over the first and why (a GEMM memory-bound on both gains the bandwidth ratio, one
  compute-bound on both the peak ratio, one that changes side says so), and one plain sentence.
  A device without the model's dtype runs the nearest one it has (``nearest_dtype``). Each
  device's step is timed whether or not its memory holds it; whether it does is analyze's
  ``Memory.fits`` (``Comparison.fits``), which every format says beside the times.
- ``sweep(model, hardware, batches, seqs=...)``: time, samples/s and bound per GEMM per batch,
  per sequence length, or on a batch x seq grid; the batch at which each GEMM turns
  compute-bound (closed form, ``analysis.batch.min_compute_bound_batch``) and the sequence
  length at which it does (``seq_transitions``: the smallest seq, searched).
- With ``prompt=`` and ``generate=``, compare's devices and sweep's points are each a whole
  generation (``analysis.generation.generate``, as analyze's ``--prompt``/``--generate``): a
  Report of its last decode step (the prefill's when one token is generated) carrying its
  ``Generation`` (time to first token, time per output token, tokens/s, latency) and the
  memory at the generation's peak, with the largest batch the whole generation fits.

Numbers stay raw here; ``output.whatif`` renders them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InputError, RooflineError, described, option
from ..files.fields import positive_int, positive_ints
from ..files.numbers import OutOfRange, parse_int, quoted, span
from ..hardware.catalog import hardware_spec
from ..hardware.spec import HardwareSpec
from ..model.dtypes import DTYPES, check_dtype, itemsize, output_problem
from ..model.layers import Linear
from ..model.network import Network, check_overrides, load_network
from ..model.repeats import MAX_LISTED, named
from ..roof import bound as roof_bound
from .batch import min_compute_bound_batch
from .generation import analyses, check_lengths, check_request, checked_source
from .generation import generate as run_generation
from .predict import basis_of, fit_of, library_of, predicts
from .report import GemmResult, Report, analyze, gemm_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes

GEMM_LAYER = "gemm"

#: The most points (batches x seqs) one sweep analyzes: each is a whole analysis, about 1 ms
#: for a small MLP on a 2-core machine (5,000 listed batches: 4 s), so this bounds a sweep to
#: seconds rather than the minutes a longer list (or a large grid) would take.
MAX_SWEEP_GRID = 10_000
#: The most GEMMs and ops (points x those of one step) one sweep analyzes: about 0.006 ms each
#: on a 2-core machine (290 points of Llama-2-7B's 839 a decode step, 243,310 analyses: 1.4 s;
#: it read 0.04 ms and capped that sweep at 297 points, a generation's at 149), so about 6 s.
MAX_SWEEP_ITEMS = 1_000_000
#: How the error messages say what a range gives.
RANGE_TEXT = "a range a..b (a, the powers of two between, b)"


def _network(model: Network | str | os.PathLike[str], call: str, **overrides: Any) -> Network:
    check_overrides(overrides, call)
    network = model if isinstance(model, Network) else load_network(model)
    return network.with_overrides(**overrides)


def _generation_overrides(model: Network | str | os.PathLike[str], overrides: dict[str, Any],
                          prompt: int | None, generate: int | None, seq: Any
                          ) -> dict[str, Any]:
    """The model settings of a generation asked of compare or sweep, refused as analyze
    refuses them (``analysis.generation.check_settings``, ``check_request``): an inference
    that starts with its prefill (a model file's own phase decode does not refuse its
    logits)."""
    source = checked_source(model, overrides.get("phase"), overrides.get("mode"))
    check_request(source, prompt, generate, seq if seq is not None else overrides.get("seq"))
    return overrides | {"mode": "inference", "phase": "prefill"}


# ---------------------------------------------------------------------------------------- gemm

def parse_dimension(value: Any, name: str) -> int:
    """A GEMM dimension: a positive integer of at most 2**40 (an integer, numpy's too:
    ``files.fields.positive_int``; or text read by ``files.numbers.parse_int``), else
    InputError."""
    if not isinstance(value, str):  # a float or a bool named as itself, not as text
        return positive_int(value, lambda _, problem: InputError("gemm", name, problem), name)
    try:
        return parse_int(value)
    except ValueError as exc:
        raise InputError("gemm", name, str(exc)) from None


#: How the what-if's operands are stored (row-major, as PyTorch keeps them): ``linear``,
#: F.linear(x, W) with W out x in (N x K): A and B both run along K; ``matmul``, A @ B with B
#: K x N: B runs along N (``Gemm.operand_rows``; it matters on Hopper in TF32)
GEMM_LAYOUTS = ("linear", "matmul")


def gemm_network(m: int | str, n: int | str, k: int | str, dtype: str = "fp16",
                 output_dtype: str | None = None, layout: str = "linear") -> Network:
    """The shape as a one-layer network: a linear layer with in = K, out = N, run forward at
    batch M (inference), so its single GEMM MM1 is (M, N, K) with M the batch dimension; its
    weight stored as ``layout`` says (``GEMM_LAYOUTS``)."""
    dims = [parse_dimension(v, name) for v, name in ((m, "M"), (n, "N"), (k, "K"))]
    check_dtype(dtype)
    problem = output_dtype and output_problem(dtype, output_dtype)
    if problem:  # said as the option it came from, not a model's field
        raise RooflineError(f"{option('output_dtype')}: {problem}")
    if layout not in GEMM_LAYOUTS:
        raise RooflineError(f"{option('layout')}: expected one of {', '.join(GEMM_LAYOUTS)}, "
                            f"got {quoted(layout)}")
    network = Network(f"gemm-{dims[0]}x{dims[1]}x{dims[2]}", dims[0], dtype, "inference",
                      (Linear(GEMM_LAYER, dims[2], dims[1],
                              weight_in_out=layout == "matmul"),))
    return network.with_overrides(output_dtype=output_dtype)


def gemm_report(m: int | str, n: int | str, k: int | str, hardware: HardwareSpec | str,
                dtype: str = "fp16", output_dtype: str | None = None,
                quantization: bool = False, layout: str = "linear") -> Report:
    """One GEMM's full verdict: the analyze Report of ``gemm_network(m, n, k)``."""
    return analyze(gemm_network(m, n, k, dtype, output_dtype, layout), hardware_spec(hardware),
                   quantization)


# ------------------------------------------------------------------------------------- compare

def _is_float(dtype: str) -> bool:
    return not dtype.startswith("int")


def nearest_dtype(dtype: str, available: tuple[str, ...]) -> str | None:
    """The dtype a device runs a model of ``dtype`` in: ``dtype`` itself if it has a peak for
    it; else, in this order, one of the same element size and the same kind (float or integer:
    fp16 -> bf16, fp32 -> tf32), the narrowest wider one of the same kind (fp16 -> fp32), a
    wider one of the other kind, the widest narrower one of the same kind, then any. Ties go
    to the canonical dtype order (fp64, fp32, tf32, fp16, bf16, int8, fp8). None if the
    device has no peak at all."""
    if dtype in available:
        return dtype
    size, kind = itemsize(dtype), _is_float(dtype)

    def rank(other: str) -> tuple:
        other_size, same_kind = itemsize(other), _is_float(other) == kind
        if other_size == size:
            order = 0 if same_kind else 2
        elif other_size > size:
            order = 1 if same_kind else 2
        else:
            order = 3 if same_kind else 4
        distance = other_size - size if other_size >= size else size - other_size
        return order, distance, DTYPES.index(other)

    return min(available, key=rank) if available else None


class GemmChange(NamedTuple):
    """Why one GEMM runs faster or slower on a device than on the baseline (data; the sentence
    is ``output.whatif.change_text``).

    ``kind``: ``"memory"`` (memory-bound on both: the bandwidth ratio, ``other / base`` GB/s,
    times the ratio of the bytes it moves), ``"compute"`` (compute-bound on both: the peak
    ratio, TFLOP/s) or ``"turns"`` (the bound changes: ``intensity`` against the device's
    ``ridge``)."""

    kind: str
    base: float  # GB/s or TFLOP/s on the baseline ("memory", "compute")
    other: float  # the same on the device
    bytes_ratio: float = 1.0  # "memory": the device's bytes over the baseline's
    bound: str = ""  # "turns": the bound on the device, and on the baseline
    base_bound: str = ""
    intensity: float = 0.0
    ridge: float = 0.0
    dtypes: tuple[str, str] = ("", "")  # "compute": the baseline's dtype and the device's


@dataclass(frozen=True)
class Comparison:
    """One model on several devices; ``reports[0]`` is the baseline."""

    reports: tuple[Report, ...]
    requested_dtype: str

    @property
    def baseline(self) -> Report:
        return self.reports[0]

    def substituted(self, report: Report) -> bool:
        """True when ``report``'s device runs another dtype than the model's (it has no peak
        for it: ``nearest_dtype`` chose)."""
        return report.dtype != self.requested_dtype

    def speedup(self, report: Report) -> float:
        """The baseline's step time over ``report``'s (a generation's: its last decode
        step's; ``generation_speedup`` is the whole generation's)."""
        return self.baseline.totals["time_s"] / report.totals["time_s"]

    @property
    def generating(self) -> bool:
        """Whether each device ran a whole generation (``compare(..., prompt=, generate=)``)."""
        return self.baseline.generation is not None

    @staticmethod
    def latency(report: Report, predicted: bool = False) -> float:
        """A device's whole generation, roofline (or ``predicted``) seconds."""
        g = report.generation
        assert g is not None, "a generation's comparison"
        return g.predicted_latency_s if predicted else g.latency_s

    def generation_speedup(self, report: Report, predicted: bool = False) -> float | None:
        """The baseline's generation latency over ``report``'s, which is also ``report``'s
        tokens/s over the baseline's (the same tokens on every device); ``predicted``: the
        same at the predicted times, None where either device has no prediction beyond its
        roofline (``predicts``). None without a generation."""
        if not self.generating or (predicted and not (self.predicts(self.baseline)
                                                      and self.predicts(report))):
            return None
        return self.latency(self.baseline, predicted) / self.latency(report, predicted)

    def predicts(self, report: Report) -> bool:
        """Whether ``report``'s device has a prediction beyond its roofline
        (``predict.predicts``)."""
        return predicts(report.hardware)

    def predicted_speedup(self, report: Report) -> float | None:
        """The baseline's predicted step time (every GEMM and op at its ``predicted_time_s``,
        on each device's own basis) over ``report``'s; None where either device has no
        prediction beyond its roofline (``predicts``)."""
        if not (self.predicts(self.baseline) and self.predicts(report)):
            return None
        return self.baseline.totals["predicted_time_s"] / report.totals["predicted_time_s"]

    @property
    def predicted_fastest(self) -> Report | None:
        """The device with the shortest predicted step among those that have a prediction
        (``predicts``; the baseline included); None when fewer than two do."""
        predicted = [r for r in self.reports if self.predicts(r)]
        if len(predicted) < 2:
            return None
        return min(predicted, key=lambda r: r.totals["predicted_time_s"])

    @property
    def fastest(self) -> Report:
        """The device with the shortest step (the baseline included)."""
        return min(self.reports, key=lambda r: r.totals["time_s"])

    @staticmethod
    def fits(report: Report) -> bool | None:
        """Whether ``report``'s device holds the step: analyze's ``Memory.fits``, the step's
        memory by part against the entry's capacity (None: it states no capacity). The times
        are the step's either way, so that a device too small still shows what it would give;
        a reader is told it cannot run it."""
        return report.memory.fits if report.memory else None

    @property
    def fastest_fitting(self) -> Report | None:
        """The device with the shortest step among those whose memory holds it (``fits``);
        None when none does."""
        fitting = [r for r in self.reports if self.fits(r)]
        return min(fitting, key=lambda r: r.totals["time_s"]) if fitting else None

    @property
    def slowest(self) -> Report:
        """The device with the longest step (the baseline included)."""
        return max(self.reports, key=lambda r: r.totals["time_s"])

    def why(self, index: int, report: Report) -> GemmChange:
        """Why GEMM ``index`` runs faster or slower on ``report``'s device than on the
        baseline."""
        return self._change(self.baseline.results[index], report.results[index], report)

    def changes(self, report: Report) -> Iterator[tuple[str, GemmChange]]:
        """Every GEMM's name and ``why`` on ``report``'s device, in numbering order, read
        beside the stored results and worked out once a distinct pair (a repeat's copies share
        theirs: Llama-3.1-405B's 1,515 training GEMMs on 27 devices built 126,000 named copies
        for it)."""
        found: dict[tuple[int, int], GemmChange] = {}
        pairs = zip(named(self.baseline.results, gemm_of), named(report.results, gemm_of),
                    strict=True)
        for (name, _, _, base), (_, _, _, other) in pairs:
            key = (id(base), id(other))
            if key not in found:
                found[key] = self._change(base, other, report)
            yield name, found[key]

    def _change(self, base: GemmResult, other: GemmResult, report: Report) -> GemmChange:
        """Why ``other`` (a GEMM on ``report``'s device) runs faster or slower than ``base``
        (the same GEMM on the baseline)."""
        b_hw, o_hw = self.baseline.hardware, report.hardware
        if base.bound == other.bound == "memory":
            return GemmChange("memory", b_hw.bandwidth_gbs, o_hw.bandwidth_gbs,
                              other.gemm.bytes / base.gemm.bytes)
        if base.bound == other.bound == "compute":
            return GemmChange("compute", b_hw.peak_tflops[base.gemm.dtype],
                              o_hw.peak_tflops[other.gemm.dtype],
                              dtypes=(base.gemm.dtype, other.gemm.dtype))
        return GemmChange("turns", 0.0, 0.0, bound=other.bound, base_bound=base.bound,
                          intensity=other.gemm.intensity,
                          ridge=o_hw.ridge(other.gemm.dtype))

    def to_dict(self) -> dict[str, Any]:
        """The numbers of the compare JSON contract (docs/design.md); the sentences it carries
        (``why``, ``dtype_note``, ``verdict``) are added by ``output.whatif``."""
        base, first = self.baseline, self.baseline.network
        devices = []
        for report in self.reports:
            totals, memory = report.totals, report.memory
            devices.append({"hardware": report.hardware.name, "dtype": report.dtype,
                            "origin": report.hardware.origin,
                            "peak_flops_per_s": report.peak_flops_per_s,
                            "bandwidth_bytes_per_s": report.bandwidth_bytes_per_s,
                            "ridge": report.ridge,
                            "time_s": totals["time_s"], "speedup": self.speedup(report),
                            "memory_bound_time_fraction": totals["memory_bound_time_fraction"],
                            "predicted_gemm_time_s": totals["predicted_gemm_time_s"],
                            "predicted_time_s": totals["predicted_time_s"],
                            "predicted_speedup": self.predicted_speedup(report),
                            "prediction_basis": basis_of(report.hardware),
                            "prediction_fit": fit_of(report.hardware),
                            "calibration_library": library_of(report.hardware),
                            "residency": _residency(report),
                            "memory_bytes": memory.total_bytes if memory else None,
                            "capacity_bytes": memory.capacity_bytes if memory else None,
                            "capacity_basis": memory.capacity_basis if memory else None,
                            "fits": self.fits(report)}
                           | self._generation_dict(report))
        gemms = []
        for index, result in enumerate(base.results):
            g = result.gemm
            row: dict[str, Any] = {"name": g.name, "layer": g.layer, "pass": g.pass_,
                                   "m": g.m, "n": g.n, "k": g.k, "batch_count": g.batch_count}
            row["time_s"] = {r.hardware.name: r.results[index].time_s for r in self.reports}
            row["predicted_time_s"] = {r.hardware.name: r.results[index].predicted_time_s
                                       for r in self.reports}
            row["speedup"] = {r.hardware.name: result.time_s / r.results[index].time_s
                              for r in self.reports}
            row["bound"] = {r.hardware.name: r.results[index].bound for r in self.reports}
            gemms.append(row)
        gen = base.generation
        return {"model": first.name, "baseline": base.hardware.name, "batch": base.batch,
                "seq": first.seq, "mode": first.mode, "phase": first.step_phase,
                "prompt": gen.prompt if gen else None, "generate": gen.generate if gen else None,
                "point_step": point_step(base),
                "optimizer": first.optimizer, "quantization_in_time": base.quantization,
                "devices": devices, "gemms": gemms}

    def _generation_dict(self, report: Report) -> dict[str, Any]:
        """A device's JSON ``generation`` (analyze's keys, with its ``speedup`` and
        ``predicted_speedup`` over the baseline's), where the comparison is of generations."""
        if report.generation is None:
            return {}
        return {"generation": report.generation.to_dict() | {
            "speedup": self.generation_speedup(report),
            "predicted_speedup": self.generation_speedup(report, predicted=True)}}

    def __repr__(self) -> str:
        """One line: the model and its devices, the baseline first (and the generation)."""
        devices = ", ".join(r.hardware.name for r in self.reports)
        g = self.baseline.generation
        what = f", a generation of prompt {g.prompt} + {g.generate}" if g else ""
        return f"<Comparison {self.baseline.network.name} on {devices}{what}>"

    def _repr_html_(self) -> str:
        """Jupyter: the compare page's block (verdict, devices, why, rooflines, GEMMs)."""
        from ..output.html import comparison_fragment

        return comparison_fragment(self)

    def plot(self, ax: Axes | None = None, **options: Any) -> Axes:
        """Step time by device; of generations, each device's latency, its time to first
        token and decode steps (``plot.plot_generation_comparison``)."""
        if self.generating:
            from ..plot import plot_generation_comparison

            return plot_generation_comparison(self, ax=ax, **options)
        from ..plot import plot_comparison

        return plot_comparison(self, ax=ax, **options)


def compare(model: Network | str | os.PathLike[str], hardware: list[HardwareSpec | str],
            quantization: bool = False, prompt: int | None = None,
            generate: int | None = None, **overrides: Any) -> Comparison:
    """Analyze ``model`` on each device; the first is the baseline. A device without the
    model's dtype runs ``nearest_dtype`` (the Comparison notes it). Needs two devices or more,
    a list: one name given alone is refused, not read as a list of its letters. ``prompt``
    and ``generate`` (together, as ``analyze_model`` takes them) run a whole generation on
    each device."""
    generating = prompt is not None or generate is not None
    if generating:
        overrides = _generation_overrides(model, overrides, prompt, generate, None)
    if isinstance(hardware, (str, os.PathLike, HardwareSpec)):
        if isinstance(hardware, str) and "," in hardware:
            hardware = [hardware]  # the comma's own hint, below
        else:
            raise InputError("hardware", "", f"compare takes two devices or more, a list (the "
                                             f"first is the baseline), got one: "
                                             f"{described(hardware)}")
    if len(hardware) < 2:
        one = hardware[0] if hardware else None
        if isinstance(one, str) and "," in one:
            raise InputError("hardware", "", f"{one!r} is one name: give each device its own "
                             f"--hw ({' '.join('--hw ' + n.strip() for n in one.split(','))})")
        raise InputError("hardware", "", "give two devices or more (the first is the "
                                         "baseline)")
    network = _network(model, "compare", **overrides)
    if generating:  # its lengths, and its prefill's settings, checked once, not per device
        assert prompt is not None and generate is not None  # _generation_overrides'
        prompt, generate = check_lengths(network, prompt, generate)
        network.with_overrides(seq=prompt).check()
    else:
        network.check()  # a missing batch, dtype or seq is named once, not per device
    _check_rows(network, "compare")
    requested = network.operand_dtype
    reports = []
    for entry in hardware:
        spec = hardware_spec(entry)
        dtype = nearest_dtype(requested, spec.dtypes)
        if dtype is None:
            spec.peak_flops_per_s(requested)  # raises: the entry has no peak at all
            raise AssertionError("unreachable: an entry without peaks fails validation")
        run = network if dtype == requested else substitute_dtype(network, dtype)
        reports.append(run_generation(run, spec, prompt, generate, quantization)
                       if prompt is not None and generate is not None else
                       analyze(run, spec, quantization))
    names = [r.hardware.name for r in reports]
    if len(set(names)) < len(names):
        raise InputError("hardware", "", f"a device is given twice: {', '.join(names)}")
    return Comparison(tuple(reports), requested)


def point_step(report: Report) -> str | None:
    """Which step of a generation ``report``'s own figures (step time, GEMMs, transitions)
    are: ``"last-decode"``, or ``"prefill"`` where one token is generated; None for a plain
    step (the JSON's ``point_step``)."""
    g = report.generation
    if g is None:
        return None
    return "last-decode" if g.decode_steps else "prefill"


def _check_rows(network: Network, command: str) -> None:
    """compare and sweep read every GEMM and op of the step (per device, per point), a
    repeat's copies included: at most ``MAX_LISTED`` of them, else RooflineError, before any
    work (the step's own count, from its runs; the batch and seq a sweep has yet to set do not
    change it)."""
    probe = replace(network, batch=network.batch or 1, seq=network.seq or 1)
    try:
        gemms, ops = probe.expand()
    except RooflineError:
        return  # what is missing or wrong is the command's own one-line error
    rows = len(gemms) + len(ops)
    if rows > MAX_LISTED:
        raise RooflineError(f"{network.source}: the step has {rows:,} GEMMs and ops; {command} "
                            f"reads each one and is capped at {MAX_LISTED:,} (analyze's table "
                            f"shows a repeated layer once)")


def substitute_dtype(network: Network, dtype: str) -> Network:
    """``network`` run in ``dtype`` and otherwise unchanged: every other field (seq, phase,
    optimizer, repeats, accumulation, source ...) is kept by construction (``replace``). An
    explicit output dtype equal to the old operand dtype follows the operands."""
    output = None if network.output_dtype == network.dtype else network.output_dtype
    return replace(network, dtype=dtype, output_dtype=output)


# --------------------------------------------------------------------------------------- sweep

def parse_batches(text: str, what: str = "batches") -> tuple[int, ...]:
    """``--batch`` (or ``--seq``, ``what="seqs"``): a comma list (``1,8,64,512``) or a range
    ``a..b``: a, every power of two strictly between, and b (the ends the user typed are
    points, powers of two or not: ``3..100`` is 3, 4, 8, 16, 32, 64, 100; ``1..16`` is 1, 2,
    4, 8, 16; ``5..7`` is 5, 7; ``1..1`` is 1). Sorted, duplicates dropped; InputError for
    anything else."""
    spec = str(text).strip()

    def fail(problem: str, got: bool = True) -> InputError:
        return InputError(what, "", f"{problem}{f', got {quoted(spec)}' if got else ''} (use e.g. "
                                    f"1,8,64,512 or 3..100: 3, the powers of two between, 100)")

    if ".." in spec:
        low, _, high = spec.partition("..")
        try:
            a, b = parse_int(low, low=0), parse_int(high, low=0)
        except OutOfRange as exc:
            raise fail(f"in the range {quoted(spec)}: {exc}", got=False) from None
        except ValueError:
            raise fail("expected a range a..b of positive integers") from None
        if a <= 0 or b < a:
            raise fail("expected 1 <= a <= b in a..b")
        return span(a, b)
    try:
        values = {parse_int(piece) for piece in spec.split(",")}
    except OutOfRange as exc:
        raise fail(f"in {quoted(spec)}: {exc}", got=False) from None
    except ValueError:
        raise fail("expected positive integers separated by commas") from None
    return tuple(sorted(values))


#: ``seq_transitions`` searches sequence lengths up to the model's context, or this without one.
SEQ_SEARCH_LIMIT = 2**20


@dataclass(frozen=True)
class Sweep:
    """One model on one device at several batches, sequence lengths, or both (``reports``
    sorted by seq, then batch). ``batches`` and ``seqs`` are the values swept (``seqs`` empty
    for a model without a sequence)."""

    reports: tuple[Report, ...]
    batches: tuple[int, ...] = ()
    seqs: tuple[int, ...] = ()

    @property
    def hardware(self) -> HardwareSpec:
        return self.reports[0].hardware

    @property
    def generating(self) -> bool:
        """Whether each point is a whole generation (``sweep(..., prompt=, generate=)``): its
        Report the last decode step's, with the ``Generation`` attached."""
        return self.reports[0].generation is not None

    @property
    def axis(self) -> str:
        """``"seq"`` when only the sequence length varies, else ``"batch"``."""
        return "seq" if len(self.seqs) > 1 and len(self.batches) <= 1 else "batch"

    @property
    def grid(self) -> bool:
        """Whether both the batch and the sequence length vary."""
        return len(self.seqs) > 1 and len(self.batches) > 1

    @property
    def unit(self) -> str:
        """What a point's throughput counts: ``tokens`` for a model with a sequence (a
        prefill's or a training step's batch x seq, a decode step's one a sequence), else
        ``samples``."""
        return "tokens" if self.reports[0].network.seq is not None else "samples"

    def rate(self, report: Report, time_s: float) -> float:
        """A point's throughput at a step time of ``time_s``: its step's tokens
        (``Step.tokens``) or samples a second, as ``unit`` says."""
        per_step = report.network.step().tokens if self.unit == "tokens" else report.batch
        return per_step / time_s

    def x(self, report: Report) -> int:
        """A report's value on the swept axis (its batch, or its seq)."""
        seq = report.network.seq
        return seq if self.axis == "seq" and seq is not None else report.network.batch or 1

    @property
    def max_batch(self) -> int | None:
        """The largest batch whose step fits in the device's memory at the first swept seq (0:
        none; None: the entry states no capacity); of a generation, the largest whose whole
        generation fits (its prefill and its last decode step)."""
        memory = self.reports[0].memory
        return memory.max_batch if memory else None

    @property
    def max_seq(self) -> int | None:
        """The largest seq whose step fits at the first swept batch (None: no capacity, or no
        sequence)."""
        memory = self.reports[0].memory
        return memory.max_seq if memory else None

    def transitions(self, report: Report | None = None) -> dict[str, int | None]:
        """Per GEMM, the smallest batch at which it is compute-bound (closed form), or None if
        no batch makes it so, at the seq of ``report`` (default: the first); a GEMM whose shape
        does not depend on the batch gets 1 when it is compute-bound, else None."""
        report = report or self.reports[0]
        out: dict[str, int | None] = {}
        found: dict[int, int | None] = {}  # per stored result: a repeat's copies share one
        for name, _, _, result in named(report.results, gemm_of):
            if id(result) not in found:
                gemm = result.gemm
                ridge = report.hardware.ridge(gemm.dtype)
                found[id(result)] = (
                    min_compute_bound_batch(gemm, ridge) if any(gemm.batch_dims) else
                    1 if roof_bound(gemm.intensity, ridge) == "compute" else None)
            out[name] = found[id(result)]
        return out

    def _first_at_each_seq(self) -> dict[int, Report]:
        firsts: dict[int, Report] = {}
        for report in self.reports:
            if report.network.seq is not None:
                firsts.setdefault(report.network.seq, report)
        return firsts

    def transitions_by_seq(self) -> dict[int, dict[str, int | None]]:
        """``transitions`` at each swept seq (a grid's batch transitions move with the seq)."""
        return {seq: self.transitions(r) for seq, r in self._first_at_each_seq().items()}

    def max_batch_by_seq(self) -> dict[int, int | None]:
        """The largest batch that fits in memory at each swept seq (None: no capacity)."""
        return {seq: r.memory.max_batch if r.memory else None
                for seq, r in self._first_at_each_seq().items()}

    @property
    def seq_limit(self) -> int:
        """How far ``seq_transitions`` searches: the model's context, else
        ``SEQ_SEARCH_LIMIT``."""
        return self.reports[0].network.context or SEQ_SEARCH_LIMIT

    def seq_transitions(self) -> dict[str, int | None] | None:
        """Per GEMM, the smallest sequence length at which it is compute-bound at the first
        swept batch (searched up to the model's context, else ``SEQ_SEARCH_LIMIT``), or None
        if none is; None for a model without a sequence, or for generations (their lengths are
        given). The search assumes a GEMM stays compute-bound once it is (its intensity does
        not fall as seq grows)."""
        first = self.reports[0]
        network = first.network
        if network.seq is None or self.generating:
            return None
        limit = self.seq_limit
        ridges: dict[str, float] = {}
        cache: dict[int, dict[str, bool]] = {}

        def bound_at(seq: int) -> dict[str, bool]:
            if seq not in cache:
                # a search, not a user's seq: past batch x seq's bound on purpose; each GEMM
                # named beside its stored template, none built (a deep model has thousands)
                gemms = replace(network, seq=seq).expand()[0]
                cache[seq] = {name: g.intensity >= ridges.setdefault(
                    name, self.hardware.ridge(g.dtype))
                    for name, _, _, g in named(gemms, lambda g: g)}
            return cache[seq]

        out: dict[str, int | None] = {}
        for name, _, _, _ in named(first.results, gemm_of):
            if not bound_at(limit).get(name, False):
                out[name] = None
                continue
            low, high = 0, limit  # bound at high; not at low (or low is 0)
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (low, middle) if bound_at(middle).get(name, False) else (
                    middle, high)
            out[name] = high
        return out

    def to_dict(self) -> dict[str, Any]:
        """The sweep JSON contract of docs/design.md (plus ``dtype``, ``mode``, ``ridge``)."""
        first = self.reports[0]
        points = []
        for report in self.reports:
            totals = report.totals
            memory = report.memory
            points.append({
                "batch": report.network.batch, "seq": report.network.seq,
                "time_s": totals["time_s"],
                "memory_bytes": memory.total_bytes if memory else None,
                "fits": memory.fits if memory else None,
                "samples_per_s": report.batch / totals["time_s"],
                "predicted_time_s": totals["predicted_time_s"],
                "predicted_samples_per_s": report.batch / totals["predicted_time_s"],
                **({"tokens_per_s": self.rate(report, totals["time_s"]),
                    "predicted_tokens_per_s": self.rate(report, totals["predicted_time_s"])}
                   if self.unit == "tokens" else {}),
                "memory_bound_time_fraction": totals["memory_bound_time_fraction"],
                "predicted_gemm_time_s": totals["predicted_gemm_time_s"],
                "weights_from_dram": report.residency.from_dram if report.residency else None,
                "gemms": [{"name": name, "intensity": r.gemm.intensity, "bound": r.bound,
                           "time_s": r.time_s, "predicted_time_s": r.predicted_time_s}
                          for name, _, _, r in named(report.results, gemm_of)]}
                | ({"generation": report.generation.to_dict()} if report.generation else {}))
        by_seq = self.transitions_by_seq() if self.grid else None
        return {"model": first.network.name, "hardware": first.hardware.name,
                "dtype": first.dtype, "seq": first.network.seq, "mode": first.network.mode,
                "phase": first.network.step_phase, "ridge": first.ridge,
                "prompt": first.generation.prompt if first.generation else None,
                "generate": first.generation.generate if first.generation else None,
                "point_step": point_step(first),
                "quantization_in_time": first.quantization,
                "prediction_basis": basis_of(first.hardware),
                "prediction_fit": fit_of(first.hardware),
                "calibration_library": library_of(first.hardware),
                "capacity_bytes": first.memory.capacity_bytes if first.memory else None,
                "capacity_basis": first.memory.capacity_basis if first.memory else None,
                "max_batch": self.max_batch, "max_seq": self.max_seq,
                "axis": self.axis, "batches": list(self.batches), "seqs": list(self.seqs),
                "points": points, "transitions": self.transitions(),
                "step": first.step.to_dict(),  # the whole step's verdict at the first point
                "seq_transitions": self.seq_transitions(),
                "transitions_by_seq": None if by_seq is None else [
                    {"seq": seq, "transitions": t, "max_batch": self.max_batch_by_seq()[seq]}
                    for seq, t in by_seq.items()]}

    def __repr__(self) -> str:
        """One line (the dataclass's own repr printed every report: 74 KB for 1..4096)."""
        swept = [f"{name} {values[0]}..{values[-1]} ({len(values)})" if len(values) > 1
                 else f"{name} {values[0]}"
                 for name, values in (("batch", self.batches), ("seq", self.seqs)) if values]
        g = self.reports[0].generation
        what = f"generations of prompt {g.prompt} + {g.generate}, " if g else ""
        return (f"<Sweep {self.reports[0].network.name} on {self.hardware.name}: "
                f"{what}{', '.join(swept)}; {len(self.reports)} points>")

    def _repr_html_(self) -> str:
        """Jupyter: the sweep page's block (charts, steps, transitions)."""
        from ..output.html import sweep_fragment

        return sweep_fragment(self)

    def plot(self, ax: Axes | None = None, **options: Any) -> Axes:
        """The sweep chart: per-GEMM intensity over the swept axis; of generations, tokens/s
        and time per output token over batch (``plot.plot_generation_sweep``)."""
        if self.generating:
            from ..plot import plot_generation_sweep

            return plot_generation_sweep(self, ax=ax, **options)
        from ..plot import plot_batch_sweep

        return plot_batch_sweep(list(self.reports), ax=ax, **options)


def _values(given: str | int | Iterable[int], what: str) -> tuple[int, ...]:
    """The batches or seqs a sweep is given: ``parse_batches`` text, a list (a numpy array
    too: ``files.fields.positive_ints``), or one integer (one point: ``batches=64`` reads as
    naturally as ``batch=64``; numpy's too, ``files.numbers.integer``)."""
    if isinstance(given, str):
        return parse_batches(given, what)

    def fail(_: str, problem: str) -> InputError:
        return InputError(what, "", problem)

    if not hasattr(given, "__iter__"):  # one integer (a 0-d array, iterable, is no list)
        if not hasattr(given, "__index__"):  # a bool has one: True is no batch of 1, below
            raise InputError(what, "", f"expected an integer, a list of them or text (1,8,64 "
                                       f"or 1..512), got {described(given)}")
        return positive_ints((given,), fail, what)
    values = positive_ints(given, fail, what)
    if not values:
        raise InputError(what, "", "expected at least one value")
    return tuple(sorted(set(values)))


def sweep(model: Network | str | os.PathLike[str], hardware: HardwareSpec | str,
          batches: str | int | Iterable[int] | None = None, quantization: bool = False,
          seqs: str | int | Iterable[int] | None = None, prompt: int | None = None,
          generate: int | None = None, **overrides: Any) -> Sweep:
    """Analyze ``model`` on ``hardware`` at each batch, each sequence length, or each pair
    (lists, one int, or ``parse_batches`` text); the one not given stays the model's own.
    ``prompt`` and ``generate`` (together, as ``analyze_model`` takes them, without ``seqs``)
    make each point a whole generation at its batch (``analysis.generation``)."""
    generating = prompt is not None or generate is not None
    if generating:
        overrides = _generation_overrides(model, overrides, prompt, generate, seqs)
    elif batches is None and seqs is None:
        raise InputError("sweep", "", f"give the batches or the sequence lengths to sweep "
                                      f"({option('batches')} or {option('seqs')})")
    network, spec = _network(model, "sweep", **overrides), hardware_spec(hardware)
    _check_rows(network, "sweep")
    # a seq on a model without a transformer is analyze's: an MLP applied per token (batch x
    # seq rows, a prefill), refused with analyze's words on an image model (Network.check)
    seq_values = _values(seqs, "seqs") if seqs is not None else ()
    if batches is not None:
        batch_values = _values(batches, "batches")
    else:
        # the model's own batch (checked when read), not settled(): with seqs swept the model
        # may give no seq of its own, and each point's check comes with its analysis
        batch_values = (network.batch,) if network.batch is not None else ()
        if not batch_values:
            raise InputError(network.source, "batch", f"missing required field (give batch "
                                                      f"in the model or {option('batch')})")
    points = len(batch_values) * max(1, len(seq_values))
    _check_grid(points, batch_values, seq_values)
    if prompt is not None and generate is not None:
        return _generations(network, spec, batch_values, prompt, generate, quantization)
    grid = [(b, s) for s in (seq_values or (None,)) for b in batch_values]
    # every point set up before any is analyzed: one whose batch x seq passes 2**40 stops here
    nets = [network.with_overrides(batch=b, seq=s) for b, s in grid]
    first = analyze(nets[0], spec, quantization)
    _check_items(first, points, 1, batch_values)
    reports = (first,) + tuple(analyze(net, spec, quantization) for net in nets[1:])
    seq_list = seq_values or ((network.seq,) if network.seq is not None else ())
    return Sweep(reports, batch_values, seq_list)


def _check_grid(points: int, batch_values: tuple[int, ...], seq_values: tuple[int, ...]
                ) -> None:
    """At most ``MAX_SWEEP_GRID`` points, else InputError."""
    if points > MAX_SWEEP_GRID:
        shape = (f"{len(batch_values):,} batches x {len(seq_values):,} seqs" if seq_values
                 else f"{len(batch_values):,} batches")
        raise InputError("batches" if len(batch_values) > 1 else "seqs", "",
                         f"{points:,} points ({shape}) are more than the {MAX_SWEEP_GRID:,} a "
                         f"sweep analyzes (each point is a whole analysis); give fewer values, "
                         f"or {RANGE_TEXT}")


def _check_items(first: Report, points: int, steps: int, batch_values: tuple[int, ...]
                 ) -> None:
    """At most ``MAX_SWEEP_ITEMS`` GEMMs and ops analyzed in all (``points`` of ``steps``
    steps each, ``first`` one of them), else InputError before the other points."""
    items = (len(first.results) + len(first.ops)) * steps
    if items * points > MAX_SWEEP_ITEMS:
        each = (f"{items:,} GEMMs and ops each" if steps == 1 else
                f"{steps} steps each (a generation's prefill and decode steps), "
                f"{items:,} GEMMs and ops")
        raise InputError("batches" if len(batch_values) > 1 else "seqs", "",
                         f"{points:,} points of {each} are "
                         f"{items * points:,} analyses, more than the {MAX_SWEEP_ITEMS:,} a "
                         f"sweep does (about {MAX_SWEEP_ITEMS // items:,} points of this "
                         f"model); give fewer values, or {RANGE_TEXT}")


def _generations(network: Network, spec: HardwareSpec, batch_values: tuple[int, ...],
                 prompt: int, generate: int, quantization: bool) -> Sweep:
    """A whole generation at each batch (``analysis.generation.generate``): its lengths
    checked and every point set up before the first is analyzed."""
    prompt, generate = check_lengths(network, prompt, generate)
    nets = [network.with_overrides(batch=b) for b in batch_values]
    first = run_generation(nets[0], spec, prompt, generate, quantization)
    _check_items(first.generation.prefill if first.generation else first, len(nets),
                 analyses(network, prompt, generate), batch_values)
    reports = (first,) + tuple(run_generation(net, spec, prompt, generate, quantization)
                               for net in nets[1:])
    return Sweep(reports, batch_values, ())


def _residency(report: Report) -> dict[str, Any] | None:
    """A report's JSON ``residency`` object (``analysis.residency``), None without one."""
    return report.residency.to_dict() if report.residency else None
