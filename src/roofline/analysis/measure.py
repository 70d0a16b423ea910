"""``analyze --measure``: time every GEMM of a report at its real shape and dtype on this
machine, and set each measurement beside the roofline bound and the prediction.

Each distinct shape (M, N, K, batch_count, dtype) is timed once, whatever number of GEMMs
share it (repeated blocks share their shapes), as the probe times its calibration: loops
calibrated, a warm-up apart, then ``ROUNDS`` round-robin rounds over the shapes of ``VALUES``
values each (``time_kernels``, ``kernels.rounds``), best / median / spread over them, so that a
slow spell of a shared machine slows one round of every shape, not every value of one (the
shapes in groups of at most ``MAX_SHAPE_BYTES`` of operands together), on the probe's
own kernels, each checked against a reference before it is timed: on a CPU the library the
entry's calibration was timed through (``cpu_library``), numpy's BLAS (fp64, fp32,
``kernels.cpu.shaped_gemm``) or torch (``kernels.torch_cpu.shaped_gemm``); on a GPU entry,
torch or cupy (``kernels.gpu``). A point faster than its roof is flagged, never hidden: the
ceiling is wrong, or the operands sat in a cache the DRAM roof does not know. On a CPU, a GEMM
whose weight the step reads from DRAM though it fits in the cache (``analysis.residency``) is
timed as the step runs it: cycling through copies of its weight (``weights_of``).

Only the standard library is imported at module level.
"""

from __future__ import annotations

import dataclasses
import platform
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import RooflineError, option
from ..hardware.sanity import OVER_CEILING
from ..kernels.load import LoadMeter
from ..model.dtypes import default_output_dtype, itemsize
from ..model.repeats import distinct, first_copies
from ..units import seconds

if TYPE_CHECKING:
    from ..kernels.timing import BenchResult
    from .report import GemmResult, Report

NUMPY_DTYPES = ("fp64", "fp32")
MAX_SHAPE_BYTES = 2 * 2**30  # one shape's A + B + C; larger ones are refused, not swapped
ROUNDS, VALUES, WARMUPS, MIN_TIME_S = 4, 2, 1, 0.005  # short values, many: probe.plan.Plan
REPEATS = ROUNDS * VALUES  # the values timed per shape
#: The least number of calls one shape's timing makes: calibration's first, the warm-ups and
#: the values (``kernels.rounds``), each value at least MIN_TIME_S long (a round's untimed
#: warm call, made when a value is several calls, is under half a value).
CALLS_PER_SHAPE = 1 + WARMUPS + REPEATS
#: A run estimated to take longer than this (``estimated_seconds``) is refused before any
#: timing: a 9000^3 fp32 GEMM ran for minutes. ``measure_budget`` raises it.
MEASURE_BUDGET_S = 60.0
#: An efficiency above this is flagged (5 % for timer and clock noise: the allowance a saved
#: entry's figures get, ``hardware.sanity.OVER_CEILING``)
BEATS_ROOF = OVER_CEILING
#: A weight the step reads from DRAM is timed cycling through copies of it that together fill
#: this many caches (at most MAX_WEIGHTS copies: a tiny weight's GEMM is its call overhead).
CYCLE_CACHES, MAX_WEIGHTS = 2, 4096


class MeasureError(RooflineError):
    """GEMMs cannot be timed here: another machine's entry, or a dtype this machine lacks."""

    option = "measure"


@dataclass(frozen=True)
class Measurement:
    """One shape timed on this machine: seconds for all ``batch_count`` GEMMs of it."""

    best_s: float
    median_s: float
    spread: float
    backend: str
    weights: int = 1  # distinct B the timing cycled through (1: the GEMM repeated)
    untimed_s: float = 0.0  # predicted work the timing does not run (``untimed_s``)
    values: int = REPEATS  # values timed (the budget can leave 1: no spread then)

    def to_dict(self, result: GemmResult) -> dict[str, Any]:
        """``measured_time_s`` and ``efficiency`` (measured FLOP/s over the roof), and more;
        ``measured_over_predicted`` against the prediction of what was timed (less
        ``untimed_s``, JSON ``predicted_untimed_s``); ``measured_values``, the values the
        best, median and spread are of (``measured_spread`` is 0 for one value, which has
        none)."""
        achieved = result.gemm.flops / self.best_s
        efficiency = achieved / result.attainable_flops_per_s
        predicted = result.predicted_time_s - self.untimed_s
        return {"measured_time_s": self.best_s, "measured_median_s": self.median_s,
                "measured_spread": self.spread, "measured_tflops": achieved / 1e12,
                "efficiency": efficiency,
                "measured_over_predicted": self.best_s / predicted if predicted > 0 else None,
                "predicted_untimed_s": self.untimed_s,
                "measured_weights": self.weights, "measured_values": self.values,
                "beats_roof": efficiency > BEATS_ROOF}


#: ``host: CPU brand, N cores, platform``, as ``probe.identify.machine_text`` writes it: the
#: host, and the CPU (brand and core count) that identifies the machine beside it.
_MACHINE = re.compile(r"^(?P<host>[^:]*): (?P<cpu>.*?, \d+ cores)(?:, .*)?$")


def _machine_parts(text: str) -> tuple[str, str | None]:
    """(host, ``brand, N cores`` or None where the text does not say) of a machine's text."""
    found = _MACHINE.match(text)
    return (found["host"], found["cpu"]) if found else (text.split(":")[0], None)


def check_measurable(report: Report, hostname: str | None = None,
                     machine: str | None = None) -> None:
    """Raise MeasureError unless ``report``'s entry describes this machine and its dtypes run
    here. This machine is ``machine`` (``probe.identify.this_machine``'s words), else the host
    ``hostname`` (default: this host's name). A host name alone does not identify a machine (a
    VM's is often ``vm``, a container's reused): where both texts name a CPU, its brand and
    core count must match too, or the entry's peaks are another machine's."""
    hw = report.hardware
    instead = (f"use {option('hardware', 'local')} (or an entry saved by `roofline probe "
               f"--save` here)")
    if hw.origin != "measured":
        raise MeasureError(f"GEMMs are timed on this machine, but {hw.name} is a datasheet "
                           f"entry; {instead}")
    record = hw.stored.get("measured")
    recorded = str(record.get("machine", "")) if isinstance(record, dict) else ""
    if not recorded:  # nothing says which machine: timing here would check nothing
        raise MeasureError(f"GEMMs are timed on the machine an entry was measured on, and "
                           f"{hw.name} has no measured.machine (the record `roofline probe "
                           f"--save` writes); {instead}")
    host, cpu = (_machine_parts(machine) if machine is not None
                 else (hostname or platform.node(), None))
    there, there_cpu = _machine_parts(recorded)
    other_cpu = cpu is not None and there_cpu is not None and cpu != there_cpu
    if there != host or other_cpu:
        said = (f"{there} ({there_cpu}), this is {host} ({cpu})" if other_cpu else
                f"{there}, this is {host}")
        raise MeasureError(f"{hw.name} was measured on {said}; use "
                           f"{option('hardware', 'local')}")
    stored = {r.gemm.name: r.gemm.b_dtype for r in first_copies(report.results)
              if r.gemm.b_dtype}
    if stored:
        names = list(stored)
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        kinds = ", ".join(sorted(set(stored.values())))
        raise MeasureError(f"timing is of dense GEMMs (A and B in the math dtype), and "
                           f"{shown} keep B as {kinds} (weight-only or a narrow KV cache): "
                           f"their kernels are not timed here, and a dense timing would not "
                           f"be theirs; drop {option('weights')} / {option('kv_cache')} to "
                           f"time the dense GEMMs")
    dtypes = {r.gemm.dtype for r in report.results} | {r.gemm.c_dtype for r in report.results}
    if hw.kind == "cpu" and not dtypes <= set(NUMPY_DTYPES):
        bad = ", ".join(sorted(dtypes - set(NUMPY_DTYPES)))
        through = "numpy's BLAS" if cpu_library(report) == "numpy" else "torch"
        raise MeasureError(f"on the CPU, GEMMs are timed through {through}, for fp64 "
                           f"and fp32 only (C included); this model needs {bad}: add "
                           f"{option('dtype', 'fp32')} (and {option('output_dtype', 'fp32')})")


def shape_key(result: GemmResult, report: Report) -> tuple:
    """What one timing covers: (M, N, K, batch_count, dtype, the weights it cycles through,
    the rows of A, B and C on a GPU entry or None)."""
    g = result.gemm
    return (g.m, g.n, g.k, g.batch_count, g.dtype, weights_of(result, report),
            layout_of(result, report))


def layout_of(result: GemmResult, report: Report) -> tuple[int, int, int] | None:
    """On a GPU entry, the dimension A's, B's and C's rows run along (``Gemm.operand_rows``):
    the GPU GEMM model predicts the kernel that layout gets (on Hopper, rows off 16 bytes and
    TF32 operands not along K run other kernels), so the timing lays its operands out so
    (``kernels.gpu._laid_out``). None on a CPU, whose kernels time row-major operands, as the
    probe's calibration did."""
    return result.gemm.operand_rows if report.hardware.kind != "cpu" else None


def weights_of(result: GemmResult, report: Report) -> int:
    """The distinct weights (B) one shape's timing cycles through: on a CPU, where the step
    reads the GEMM's weight from DRAM though its working set fits in the cache
    (``analysis.residency``), enough copies to fill ``CYCLE_CACHES`` caches (at most
    ``MAX_WEIGHTS``), as the step finds it; else 1, the GEMM repeated. (A GPU's kernels time
    one B: there the measurement stays the repeated GEMM's.)"""
    residency, g = report.residency, result.gemm
    b = g.kept_operands.get("b", 0)
    if (report.hardware.kind != "cpu" or residency is None or residency.cache_bytes is None
            or not b or not residency.streams(g)):
        return 1
    return min(MAX_WEIGHTS, max(2, -(-CYCLE_CACHES * residency.cache_bytes // b)))


def estimated_seconds(report: Report) -> float:
    """The least time timing ``report``'s GEMMs takes: per distinct shape, CALLS_PER_SHAPE
    values, each at least the shape's roofline time (its FLOPs over the entry's peak, or its
    bytes over the bandwidth when longer: no call is faster than that on this machine, whose
    entry holds its measured figures) and at least MIN_TIME_S (the calibrated value). A lower
    bound, not a forecast: a calibrated value aims at 1.2x MIN_TIME_S, a call runs slower
    than its roof, a round makes a warm call, and making the operands and checking a call
    against a reference comes first (17 small shapes estimated at 0.85 s took 2.66 s on the
    shared 2-vCPU development VM, 0.74 s of it making them); the budget, not this, bounds a
    run under way."""
    roof = {shape_key(r, report): r.time_s for r in reversed(report.results)}
    return sum(CALLS_PER_SHAPE * max(t, MIN_TIME_S) for t in roof.values())


def check_budget(report: Report, budget_s: float = MEASURE_BUDGET_S) -> None:
    """Raise MeasureError if timing ``report`` would take longer than ``budget_s`` by
    ``estimated_seconds``."""
    estimate = estimated_seconds(report)
    if estimate > budget_s:
        shapes = len({shape_key(r, report) for r in report.results})
        raise MeasureError(f"timing the {shapes} distinct GEMM shape{'s' * (shapes > 1)} of "
                           f"{report.network.name} on {report.hardware.name} would take at "
                           f"least {seconds(estimate)} ({CALLS_PER_SHAPE} calls each at its "
                           f"roofline time), over the {budget_s:g} s budget; lower "
                           f"{option('batch')} or {option('seq')}, or raise "
                           f"{option('measure_budget')}")


def cpu_library(report: Report) -> str:
    """What a CPU entry's GEMMs are timed through: the library its calibration was (torch for
    ``probe --library torch``), else numpy's BLAS; measured and predicted then describe the
    same library."""
    calibration = report.hardware.calibration
    library = calibration.through if calibration is not None else None
    return "torch" if library is not None and library.name == "torch" else "numpy"


def default_kernels(report: Report) -> tuple[Callable, str]:
    """``(make(m, n, k, g, dtype) -> Kernel, backend name)`` for the report's device."""
    if report.hardware.kind == "cpu" and cpu_library(report) == "torch":
        from ..kernels.torch_cpu import installed
        from ..kernels.torch_cpu import shaped_gemm as torch_gemm

        if not installed():
            raise MeasureError(f"{report.hardware.name} was calibrated through torch, which "
                               f"is not installed here: GEMMs are timed through the library "
                               f"the prediction was calibrated through")

        return torch_gemm, "torch"
    if report.hardware.kind == "cpu":
        from ..kernels.cpu import shaped_gemm

        return shaped_gemm, "numpy"
    from ..kernels.gpu import gpu_backend

    backend, reason = gpu_backend()
    if backend is None:
        raise MeasureError(f"timing GEMMs on a GPU entry needs torch or cupy with a GPU: "
                           f"{reason}")
    if any(r.gemm.dtype not in backend.dtypes for r in report.results):
        raise MeasureError(f"{backend.name} here runs "
                           f"{', '.join(backend.dtypes)}")
    if getattr(backend, "graphs", False):  # the kernels' time, as a graph-timed calibration's
        return backend.graphed_gemm, f"{backend.name}, CUDA graph"
    return backend.shaped_gemm, backend.name


def allocated_bytes(m: int, n: int, k: int, g: int, dtype: str, weights: int = 1) -> int:
    """What timing one shape allocates: A and ``weights`` B in ``dtype``, C in its default
    output dtype (int8 -> int32, fp8 -> bf16), ``g`` times: the kernels in roofline.kernels
    allocate no more."""
    c_size = itemsize(default_output_dtype(dtype))
    return g * ((m * k + weights * k * n) * itemsize(dtype) + m * n * c_size)


def measure_report(report: Report, progress: Callable[[str], None] | None = None,
                   make_kernel: Callable | None = None, backend: str | None = None,
                   clock: Callable[[], float] = time.perf_counter,
                   hostname: str | None = None,
                   budget_s: float = MEASURE_BUDGET_S, machine: str | None = None) -> Report:
    """``report`` with a Measurement on every GEMM (each distinct shape timed once); refused
    (MeasureError) when the timing would take longer than ``budget_s`` (``check_budget``)."""
    check_measurable(report, hostname, machine)
    check_budget(report, budget_s)
    if make_kernel is None:
        make_kernel, backend = default_kernels(report)
    say = progress or (lambda message: None)
    shapes = list(dict.fromkeys(shape_key(r, report) for r in report.results))
    for m, n, k, g, dtype, weights, _ in shapes:
        if allocated_bytes(m, n, k, g, dtype, weights) > MAX_SHAPE_BYTES:
            over = (f" over {weights} copies of its weight (the step reads it from DRAM: "
                    f"{CYCLE_CACHES} caches of {report.hardware.llc_mb:g} MiB of them)"
                    if weights > 1 else "")
            raise MeasureError(f"{g} x {m}x{n}x{k} {dtype}{over} needs more "
                               f"than {MAX_SHAPE_BYTES / 2**30:.0f} GiB of operands; lower "
                               f"{option('batch')} or {option('seq')}")
    what = "shapes and layouts" if report.hardware.kind != "cpu" else "shapes"
    say(f"measuring {len(shapes)} distinct GEMM {what} of {len(report.results)} GEMMs "
        f"({backend}), {ROUNDS} rounds: at least {seconds(estimated_seconds(report))} of "
        f"timing, stopped at the {budget_s:g} s budget ...")
    timed: dict[tuple, Measurement] = {}
    meter = LoadMeter()  # other programs sharing the machine make every timing theirs too
    started = clock()
    parts = groups(shapes)
    for number, group in enumerate(parts, 1):
        try:
            kernels = [make_kernel(*key[:5], **({"weights": key[5]} if key[5] > 1 else {}),
                                   **({"rows": key[6]} if key[6] is not None else {}))
                       for key in group]
            # the budget counts making the operands and checking a call of each (a float64
            # reference product): on a small shape they take longer than its timing
            left = max(0.0, budget_s - (clock() - started))
            of = f" (group {number} of {len(parts)})" if len(parts) > 1 else ""
            timings = time_kernels([k.run for k in kernels], clock, left, say, of)
        except (RuntimeError, MemoryError) as exc:  # the library's own error (CUDA, OOM)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise MeasureError(f"{backend or 'the backend'} failed timing "
                               f"{_shape(group[0])}: {first}") from exc
        for key, kernel, result in zip(group, kernels, timings):
            calls = kernel.calls  # a graph's replay makes several GEMMs: one GEMM's seconds
            timed[key] = Measurement(result.best_s / calls, result.median_s / calls,
                                     result.spread, backend or "", key[5],
                                     values=len(result.samples_s))
            say(_line(len(timed), len(shapes), key, result, budget_s, calls))
    say(f"  timed in {seconds(clock() - started)}, making and checking each shape's operands "
        f"included")
    results = tuple(dataclasses.replace(r, measured=_untimed(timed[shape_key(r, report)], r,
                                                             report))
                    for r in report.results)
    return dataclasses.replace(report, results=results,
                               measured_other_load_cpus=meter.total())


def untimed_s(result: GemmResult, report: Report) -> float:
    """What a GEMM's prediction holds that its timing does not run: on a GPU, the transposes
    cuDNN makes around an NCHW convolution's GEMM (``predict.added_transposes_s``) and the
    CUDA-core bound of a convolution of fewer than 16 input channels
    (``predict.added_narrow_channels_s``), which the bare GEMM timed here leaves out; 0 for
    every other GEMM."""
    from .predict import added_narrow_channels_s, added_transposes_s

    return (added_transposes_s(result.gemm, report.hardware)
            + added_narrow_channels_s(result.gemm, report.hardware))


def _untimed(measured: Measurement, result: GemmResult, report: Report) -> Measurement:
    extra = untimed_s(result, report)
    return dataclasses.replace(measured, untimed_s=extra) if extra else measured


def time_kernels(runs: list[Callable[[int], object]],
                 clock: Callable[[], float] = time.perf_counter,
                 budget_s: float | None = None,
                 progress: Callable[[str], None] | None = None,
                 of: str = "") -> list[BenchResult]:
    """Kernels timed as ``--measure`` times GEMM shapes (the module docstring), within
    ``budget_s``: ``benchmarks/bench_predict.py`` times its shapes through this too. The
    rounds run over every kernel, so no kernel's figure is done before the last round:
    ``progress`` hears a line when the loops are calibrated and one after each round, as it
    ends (``of``: which group of shapes, where there are several), and why the rounds stopped
    where the budget cut them."""
    from ..kernels.rounds import RoundRobin

    say = progress or (lambda message: None)
    began = clock()
    timer = RoundRobin(runs, MIN_TIME_S, WARMUPS, clock, True, budget_s)
    shapes = f"{len(runs)} shape{'s' * (len(runs) != 1)}"
    say(f"  loops calibrated and warmed up{of}: {shapes}, {seconds(clock() - began)}")

    def ended(index: int) -> None:
        say(f"  round {index + 1} of {ROUNDS} done{of}: {shapes}, "
            f"{seconds(clock() - began)}")

    done = timer.rounds(ROUNDS, VALUES, after_round=ended)
    if done < ROUNDS:
        say(f"  rounds stopped at {done} of {ROUNDS}{of} by the budget (the next would end "
            f"past it)")
    return timer.results()


def groups(shapes: list[tuple]) -> list[list[tuple]]:
    """``shapes`` (``shape_key``s) in order, in groups whose operands
    (``allocated_bytes``) together stay within ``MAX_SHAPE_BYTES``: a group's kernels live
    together while its rounds run."""
    out: list[list[tuple]] = []
    held = 0
    for key in shapes:
        size = allocated_bytes(*key[:6])
        if not out or held + size > MAX_SHAPE_BYTES:
            out.append([])
            held = 0
        out[-1].append(key)
        held += size
    return out


def _shape(key: tuple) -> str:
    m, n, k, g, dtype = key[:5]
    return f"{(str(g) + ' x ') if g > 1 else ''}{m}x{n}x{k} {dtype}"


def _line(i: int, count: int, key: tuple, result: BenchResult, budget_s: float,
          calls: int = 1) -> str:
    from ..model.gemm import rows_text

    weights, rows = key[5:]
    laid = rows_text(rows) if rows is not None else ""
    values = len(result.samples_s)
    cut = (f"; {values} of {REPEATS} values, within the {budget_s:g} s budget"
           if result.cut else "")
    over = f" over {weights} weights" if weights > 1 else ""
    if values == 1:  # one value has no median or spread of its own
        return (f"  [{i}/{count}] {_shape(key)}{over}{laid}: "
                f"{seconds(result.best_s / calls)} (1 value, no spread{cut})")
    rounds = (f", rounds {result.round_spread:.0%} apart" if len(result.round_best_s) > 1
              else "")
    return (f"  [{i}/{count}] {_shape(key)}{over}{laid}: "
            f"{seconds(result.best_s / calls)} (median {seconds(result.median_s / calls)}, "
            f"spread {result.spread:.1%}{rounds}{cut})")


def beats_roof(report: Report) -> list[tuple[str, float]]:
    """``(GEMM name, measured FLOP/s over the roof)`` for each GEMM that ran faster than its
    roof (by more than ``BEATS_ROOF``): never passed over silently."""
    out: list[tuple[str, float]] = []
    if not any(r.measured is not None for r in distinct(report.results)):
        return out  # nothing measured: no GEMM built to be asked
    for r in first_copies(report.results):
        if r.measured is None or r.gemm.copy:
            continue
        eff = r.gemm.flops / r.measured.best_s / r.attainable_flops_per_s
        if eff > BEATS_ROOF:
            out.append((r.gemm.name, eff))
    return out
