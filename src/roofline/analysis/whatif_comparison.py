"""``compare``'s answer: ``Comparison``, one model on several devices (the baseline first),
its speedups at the roof and predicted, of generations too, which device is fastest and which
hold the step, and why each GEMM gains or loses (``GemmChange``); the numbers of the compare
JSON contract."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ..model.item_numbers import Names, grouped, same_runs
from ..model.repeats import first_copies, named
from .generation import point_step
from .predict import basis_of, fit_of, library_of, predicts
from .report import GemmResult, Report, gemm_of
from .serving_tp import served_fields

if TYPE_CHECKING:
    from matplotlib.axes import Axes

K = TypeVar("K", bound=Hashable)


class GemmChange(NamedTuple):
    """Why one GEMM runs faster or slower on a device than on the baseline (data; the sentence
    is ``output.whatif_why.change_text``).

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

    @property
    def tp(self) -> int:
        """The GPUs each device serves the model over (``compare(..., tp=)``): each report is
        then one GPU's shard, its tokens/s the group's; 1 where one GPU runs it."""
        group = self.baseline.tensor_parallel
        return group.tp if group else 1

    @property
    def pp(self) -> int:
        """The pipeline stages each device serves the model over (``compare(..., pp=)``): each
        report is then one GPU's of tp x pp, its memory the most loaded stage's, its tokens/s
        the pipeline's with its pp batches in flight; 1 without a pipeline."""
        pipeline = self.baseline.pipeline_parallel
        return pipeline.pp if pipeline else 1

    @staticmethod
    def latency(report: Report, predicted: bool = False) -> float:
        """A device's whole generation, roofline (or ``predicted``) seconds."""
        g = report.generation
        assert g is not None, "a generation's comparison"
        return g.predicted_latency_s if predicted else g.latency_s

    @staticmethod
    def round_s(report: Report, predicted: bool = False) -> float:
        """A device's whole generation as its tokens/s count it: its latency; over a pipeline
        (``compare(..., pp=)``) the steady time of each of its batches in flight
        (``Generation.steady_s``: each phase max(its latency, pp x its slowest stage))."""
        g = report.generation
        assert g is not None, "a generation's comparison"
        steady = g.predicted_steady_s if predicted else g.steady_s
        return steady or Comparison.latency(report, predicted)

    def generation_speedup(self, report: Report, predicted: bool = False) -> float | None:
        """The baseline's generation time (``round_s``: its latency, over a pipeline its
        steady time) over ``report``'s, which is ``report``'s tokens/s over the baseline's
        (the same tokens on every device); ``predicted``: the same at the predicted times,
        None where either device has no prediction beyond its roofline (``predicts``). None
        without a generation."""
        if not self.generating or (predicted and not (self.predicts(self.baseline)
                                                      and self.predicts(report))):
            return None
        return self.round_s(self.baseline, predicted) / self.round_s(report, predicted)

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

    def rank(self, report: Report, predicted: bool = False) -> float:
        """What compare ranks devices by: the step's seconds, or of generations the whole
        generation's latency (over a pipeline its steady time, ``round_s``: its tokens/s); at
        the roofline, or ``predicted``."""
        if self.generating:
            return self.round_s(report, predicted)
        return report.totals["predicted_time_s" if predicted else "time_s"]

    def fastest_of(self, reports: Sequence[Report], predicted: bool = False) -> Report:
        """The first of ``reports`` by ``rank``."""
        return min(reports, key=lambda r: self.rank(r, predicted))

    @property
    def predicted_fastest(self) -> Report | None:
        """The device fastest at its prediction among those that have one (``predicts``; the
        baseline included); None when fewer than two do."""
        predicted = [r for r in self.reports if self.predicts(r)]
        return self.fastest_of(predicted, True) if len(predicted) > 1 else None

    @property
    def fastest(self) -> Report:
        """The fastest device by ``rank`` (the baseline included)."""
        return self.fastest_of(self.reports)

    @staticmethod
    def fits(report: Report) -> bool | None:
        """Whether ``report``'s device holds the step: analyze's ``Memory.fits``, the step's
        memory by part against the entry's capacity (None: it states no capacity). The times
        are the step's either way, so that a device too small still shows what it would give;
        a reader is told it cannot run it."""
        return report.memory.fits if report.memory else None

    @property
    def fastest_fitting(self) -> Report | None:
        """The fastest device by ``rank`` among those whose memory holds the step (``fits``);
        None when none does."""
        fitting = [r for r in self.reports if self.fits(r)]
        return self.fastest_of(fitting) if fitting else None

    @property
    def slowest(self) -> Report:
        """The slowest device by ``rank`` (the baseline included)."""
        return max(self.reports, key=self.rank)

    def gemm_speedup(self, index: int, report: Report) -> float:
        """GEMM ``index``'s roofline time on the baseline over its time on ``report``'s
        device (``result_speedup``)."""
        return self.result_speedup(self.baseline.results[index], report.results[index])

    @staticmethod
    def result_speedup(base: GemmResult, other: GemmResult) -> float:
        """A GEMM's roofline time on the baseline (``base``) over its time on another device
        (``other``): what ``gemm_speedup`` and the JSON's ``speedup`` give."""
        return base.time_s / other.time_s

    def why(self, index: int, report: Report) -> GemmChange:
        """Why GEMM ``index`` runs faster or slower on ``report``'s device than on the
        baseline."""
        return self.result_change(self.baseline.results[index], report.results[index], report)

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
                found[key] = self.result_change(base, other, report)
            yield name, found[key]

    def grouped_changes(self, report: Report, key: Callable[[GemmChange], K]
                        ) -> dict[K, Names]:
        """The GEMMs grouped by ``key`` of why each gains or loses on ``report``'s device
        (``why``), in the order each key first comes: their numbers as runs where the devices'
        steps share their runs (a repeat's copies share their change: worked out, and
        grouped, once a distinct pair of templates, ``model.item_numbers.grouped``), else
        their names."""
        return grouped([self.baseline.results, report.results],
                       lambda pair: key(self.result_change(pair[0], pair[1], report)), gemm_of)

    def listed(self) -> Iterator[tuple[str, str, tuple[GemmResult, ...]]]:
        """Every GEMM, a repeat's copies included, as its name, its layer and its result on
        each device (the baseline's first; a repeat's copies read their stored result, not
        renamed: its figures are the copy's), in numbering order: what the JSON and CSV list,
        each copy named beside its stored result, none built (they had built each copy's
        result five times a device: 22 s for 10**4 blocks on three devices)."""
        steps = [named(r.results, gemm_of) for r in self.reports]
        for at in zip(*steps, strict=True):
            name, layer, _, _ = at[0]
            yield name, layer, tuple(result for _, _, _, result in at)

    def first_copies(self) -> Iterator[tuple[GemmResult, ...]]:
        """Each GEMM a table shows (not a repeated copy: copy number 0) as its result on each
        device, the baseline's first, in numbering order; read run by run where the devices'
        steps share their runs."""
        steps = [r.results for r in self.reports]
        if same_runs(steps):
            for results in zip(*map(first_copies, steps), strict=True):
                if not results[0].gemm.copy:
                    yield results
            return
        for index, result in enumerate(self.baseline.results):
            if not result.gemm.copy:
                yield tuple(r.results[index] for r in self.reports)

    def result_change(self, base: GemmResult, other: GemmResult, report: Report
                      ) -> GemmChange:
        """Why ``other`` (a GEMM on ``report``'s device) runs faster or slower than ``base``
        (the same GEMM on the baseline): what ``why`` and ``changes`` give, and the JSON's and
        CSV's listings read beside each row's stored results (``output.whatif``)."""
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

    def gemm_fields(self, results: Sequence[GemmResult]) -> dict[str, Any]:
        """A GEMM's JSON object after its name and layer, from its result on each device (the
        baseline's first: ``listed``): its pass and shape, then its time, predicted time,
        speedup over the baseline and bound on each device, by device name; the same for
        every copy of a repeat (each reads its run's stored results)."""
        g = results[0].gemm
        hardware = [r.hardware.name for r in self.reports]
        return {"pass": g.pass_, "m": g.m, "n": g.n, "k": g.k, "batch_count": g.batch_count,
                "time_s": {hw: x.time_s for hw, x in zip(hardware, results)},
                "predicted_time_s": {hw: x.predicted_time_s
                                     for hw, x in zip(hardware, results)},
                "speedup": {hw: self.result_speedup(results[0], x)
                            for hw, x in zip(hardware, results)},
                "bound": {hw: x.bound for hw, x in zip(hardware, results)}}

    def to_dict(self, gemms: Any = None) -> dict[str, Any]:
        """The numbers of the compare JSON contract (docs/design.md); the sentences it carries
        (``why``, ``dtype_note``, ``verdict``) are added by ``output.whatif``. ``gemms``: what
        to list under ``gemms`` in place of each GEMM's dict (``{"name", "layer"} |
        gemm_fields``, every copy's, in ``listed`` order): ``output.whatif`` gives them with
        their why, as a list or as an iterator its JSON writes as it reads (0.9.0)."""
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
                            # of time_s and predicted_time_s, the forward work recomputation
                            # runs again (analysis.recompute; 0 without)
                            "recompute_time_s": totals["recompute_time_s"],
                            "predicted_recompute_time_s": totals["predicted_recompute_time_s"],
                            "predicted_speedup": self.predicted_speedup(report),
                            "prediction_basis": basis_of(report.hardware),
                            "prediction_fit": fit_of(report.hardware),
                            "calibration_library": library_of(report.hardware),
                            "residency": _residency(report),
                            "memory_bytes": memory.total_bytes if memory else None,
                            "capacity_bytes": memory.capacity_bytes if memory else None,
                            "capacity_basis": memory.capacity_basis if memory else None,
                            "fits": self.fits(report)}
                           | served_fields(report) | self._generation_dict(report))
        if gemms is None:
            gemms = [{"name": name, "layer": layer} | self.gemm_fields(results)
                     for name, layer, results in self.listed()]
        gen = base.generation
        return {"model": first.name, "baseline": base.hardware.name, "batch": base.batch,
                "seq": first.seq, "mode": first.mode, "phase": first.step_phase,
                "prompt": gen.prompt if gen else None, "generate": gen.generate if gen else None,
                "point_step": point_step(base),
                "optimizer": first.optimizer,
                "recompute": first.step_recompute,
                "quantization_in_time": base.quantization,
                # 0.9.0: the GPUs each device serves over (compare --tp); above 1 every figure
                # is one GPU's shard, tokens/s the group's, each device's tensor_parallel
                "tp": self.tp,
                # 0.9.0: the pipeline's stages (compare --pp); above 1 every figure is one
                # GPU's of tp x pp, each device's pipeline_parallel
                "pp": self.pp,
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
        served = (f", one GPU of tp {self.tp} x pp {self.pp} each" if self.pp > 1 else
                  f", one GPU of tp {self.tp} each" if self.tp > 1 else "")
        return f"<Comparison {self.baseline.network.name} on {devices}{what}{served}>"

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


def _residency(report: Report) -> dict[str, Any] | None:
    """A report's JSON ``residency`` object (``analysis.residency``), None without one."""
    return report.residency.to_dict() if report.residency else None
