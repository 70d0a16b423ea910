"""``sweep``'s answer: ``Sweep``, one model on one device at several batches, sequence lengths
or both; each point's throughput, the largest batch and seq that fit, the batch at which each
GEMM turns compute-bound (closed form; of a captured module, over the dimension its captures
show growing with the batch, ``captured_scaling``) and the seq at which it does (searched);
the sweep JSON contract."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..hardware.spec import HardwareSpec
from ..model.gemm import Gemm
from ..model.item_numbers import (
    Names,
    grouped,
    grouped_names,
    grouped_rows,
    named_rows,
    same_runs,
    template_values,
)
from ..model.repeats import Numbered, named
from ..roof import bound as roof_bound
from .batch import min_compute_bound_batch
from .captured_scaling import one_batch_reason, scaled_gemm
from .generation import point_step
from .predict import basis_of, fit_of, library_of
from .report import GemmResult, Report, gemm_of
from .serving_tp import served_fields

if TYPE_CHECKING:
    from matplotlib.axes import Axes

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
    def tp(self) -> int:
        """The GPUs each point is served over (``sweep(..., tp=)``): each report is then one
        GPU's shard, its throughput the group's; 1 where one GPU runs it."""
        group = self.reports[0].tensor_parallel
        return group.tp if group else 1

    @property
    def pp(self) -> int:
        """The pipeline stages each point is served over (``sweep(..., pp=)``): each report is
        then one GPU's of tp x pp, its memory the most loaded stage's, its throughput the
        pipeline's with its pp batches in flight (``rate``); 1 without a pipeline."""
        pipeline = self.reports[0].pipeline_parallel
        return pipeline.pp if pipeline else 1

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

    def rate(self, report: Report, predicted: bool = False, unit: str | None = None) -> float:
        """A point's throughput, at its step time (``predicted``: its predicted one): its
        step's tokens (``Step.tokens``) or samples a second, as ``unit`` (default: the sweep's)
        says; over a pipeline of pp stages the pp batches in flight's, one coming round every
        ``PipelineStep.cycle`` (``analysis.serving_pp``), as analyze's pipeline line gives
        it."""
        per_step = (report.network.step().tokens if (unit or self.unit) == "tokens"
                    else report.batch)
        pipeline = report.pipeline_parallel
        if pipeline is not None and pipeline.prefill is None:  # a step's, not a generation's
            return pipeline.pp * per_step / pipeline.step.cycle(predicted)
        return per_step / report.totals["predicted_time_s" if predicted else "time_s"]

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

    @property
    def captured(self) -> bool:
        """Whether the points are captures of a PyTorch module (one a batch), whose GEMMs'
        batch dimensions are read from the captures (``captured_scaling``)."""
        return self.reports[0].network.captured_batch is not None

    def transitions(self, report: Report | None = None) -> dict[str, int | None]:
        """Per GEMM, the smallest batch at which it is compute-bound (closed form), or None if
        no batch makes it so, at the seq of ``report`` (default: the first); a GEMM whose shape
        does not depend on the batch gets 1 when it is compute-bound, else None. Of a captured
        module: over the batch dimensions its captures show, None too where they cannot be
        read (``unknown_transitions`` says why). ``transition_items`` gives them one by one."""
        return dict(self.transition_items(report))

    def transition_items(self, report: Report | None = None) -> Iterator[tuple[str, int | None]]:
        """``transitions`` as (name, batch) pairs in numbering order, made as they are read
        (the sweep JSON writes a repeat's every copy's without holding them)."""
        if self.captured:
            yield from self._captured_transitions[0].items()
            return
        report = report or self.reports[0]
        found: dict[int, int | None] = {}  # per stored result: a repeat's copies share one
        for name, _, _, result in named(report.results, gemm_of):
            if id(result) not in found:
                found[id(result)] = _transition(result.gemm, report.hardware)
            yield name, found[id(result)]

    def transition_rows(self, report: Report | None = None) -> list[list[int | None]] | None:
        """``transitions`` run by run: each run's values for one copy of ``report``'s GEMMs
        (default: the first point's; ``model.item_numbers.template_values``, worked out once
        a distinct template), which every copy of the run shares; None where the GEMMs are
        not in runs (a captured module's)."""
        report = report or self.reports[0]
        results = report.results
        if self.captured or not isinstance(results, Numbered):
            return None
        hardware = report.hardware
        return template_values([results], lambda at: _transition(at[0].gemm, hardware))

    def transition_groups(self, report: Report | None = None) -> dict[int | None, Names]:
        """The GEMMs grouped by ``transitions``' batch, each group's numbers as runs (a
        repeat's copies share theirs: worked out once a distinct GEMM, and not named one by
        one, ``model.item_numbers``), or of a captured module its GEMMs' names."""
        if self.captured:
            return grouped_names(self._captured_transitions[0])
        report = report or self.reports[0]
        hardware = report.hardware
        return grouped([report.results], lambda at: _transition(at[0].gemm, hardware), gemm_of)

    @property
    def unknown_transitions(self) -> dict[str, str]:
        """Per GEMM whose transition is not known, why (a phrase): a captured module's GEMM
        whose batch dimension its captures do not show (one capture; a GEMM that changes
        otherwise, ``captured_scaling.scaled_gemm``); empty for a model file's, whose
        dimensions say it."""
        return dict(self._captured_transitions[1]) if self.captured else {}

    @property
    def transitions_basis(self) -> str:
        """What the transitions are read from: ``"model"``, the batch dimensions the model's
        layers give; ``"captures"``, those the captures at the swept batches show."""
        return "captures" if self.captured else "model"

    @cached_property
    def _captured_transitions(self) -> tuple[dict[str, int | None], dict[str, str]]:
        """``transitions`` and ``unknown_transitions`` of a captured module, each GEMM (by its
        name at every point) scaled as its captures show (``captured_scaling``)."""
        batches = [r.network.captured_batch or 0 for r in self.reports]
        at = [{name: result.gemm for name, _, _, result in named(r.results, gemm_of)}
              for r in self.reports]
        names = list(dict.fromkeys(name for points in at for name in points))
        out: dict[str, int | None] = dict.fromkeys(names)
        if len(set(batches)) < 2:
            return out, dict.fromkeys(names, one_batch_reason(batches[0]))
        unknown: dict[str, str] = {}
        for name in names:
            scaled = scaled_gemm([points.get(name) for points in at], batches)
            if isinstance(scaled, str):
                unknown[name] = scaled
            else:
                out[name] = _transition(scaled, self.hardware)
        return out, unknown

    def first_at_each_seq(self) -> dict[int, Report]:
        """Each swept seq's first point (its lowest batch): what the transitions at that seq
        are read at."""
        firsts: dict[int, Report] = {}
        for report in self.reports:
            if report.network.seq is not None:
                firsts.setdefault(report.network.seq, report)
        return firsts

    def transitions_by_seq(self) -> dict[int, dict[str, int | None]]:
        """``transitions`` at each swept seq (a grid's batch transitions move with the seq)."""
        return {seq: self.transitions(r) for seq, r in self.first_at_each_seq().items()}

    def transition_groups_by_seq(self) -> dict[int, dict[int | None, Names]]:
        """``transition_groups`` at each swept seq."""
        return {seq: self.transition_groups(r) for seq, r in self.first_at_each_seq().items()}

    def max_batch_by_seq(self) -> dict[int, int | None]:
        """The largest batch that fits in memory at each swept seq (None: no capacity)."""
        return {seq: r.memory.max_batch if r.memory else None
                for seq, r in self.first_at_each_seq().items()}

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
        not fall as seq grows). ``seq_transition_items`` gives them one by one."""
        items = self.seq_transition_items()
        return None if items is None else dict(items)

    def seq_transition_items(self) -> Iterator[tuple[str, int | None]] | None:
        """``seq_transitions`` as (name, seq) pairs in numbering order, made as they are read
        (a repeat's copies named from its runs' values); None where there is no such search."""
        found = self._seq_found
        if found is None or isinstance(found, dict):
            return None if found is None else iter(found.items())
        results = self.reports[0].results
        assert isinstance(results, Numbered)
        return named_rows(results, found)

    def seq_transition_rows(self) -> list[list[int | None]] | None:
        """``seq_transitions`` run by run (the first point's runs), where the search went so;
        None where it went GEMM by GEMM or there is none."""
        found = self._seq_found
        return found if isinstance(found, list) else None

    def seq_transition_groups(self) -> dict[int | None, Names] | None:
        """The GEMMs grouped by ``seq_transitions``' seq, each group's numbers as runs (or the
        names of GEMMs not in runs); None where there is no such search."""
        found = self._seq_found
        if found is None or isinstance(found, dict):
            return None if found is None else grouped_names(found)
        results = self.reports[0].results
        assert isinstance(results, Numbered)
        return grouped_rows(results, found)

    @cached_property
    def _seq_found(self) -> list[list[int | None]] | dict[str, int | None] | None:
        """``seq_transitions``' search: run by run, the seq found for each GEMM of one copy
        (each run's copies are the same GEMM at every seq: searched once), where the step at
        every seq searched has the same runs as the first point's; else by name."""
        first = self.reports[0]
        network = first.network
        if network.seq is None or self.generating:
            return None
        if same_runs([first.results]):
            try:
                return self._seq_search_runs()
            except _OtherRuns:
                pass
        return self._seq_search_names()

    def _seq_search_runs(self) -> list[list[int | None]]:
        """The search of ``_seq_found`` over the runs of the first point's GEMMs, each GEMM
        of a run's copy (its intensity against the ridge of its dtype at each seq probed
        worked out once per distinct template); ``_OtherRuns`` where a seq's step is laid
        out otherwise."""
        first = self.reports[0]
        network, results = first.network, first.results
        assert isinstance(results, Numbered)
        shape = [(start, count, len(items)) for start, count, items in results.blocks()]
        limit = self.seq_limit
        ridges: dict[str, float] = {}
        cache: dict[int, list[list[bool]]] = {}

        def bound_at(seq: int) -> list[list[bool]]:
            if seq not in cache:
                # a search, not a user's seq: past batch x seq's bound on purpose
                gemms = replace(network, seq=seq).expand()[0]
                if not isinstance(gemms, Numbered) or [
                        (start, count, len(items))
                        for start, count, items in gemms.blocks()] != shape:
                    raise _OtherRuns
                rows: list[list[bool]] = []
                seen: dict[int, list[bool]] = {}
                for _, _, items in gemms.blocks():
                    if id(items) not in seen:
                        seen[id(items)] = [g.intensity >= ridges.setdefault(
                            g.dtype, self.hardware.ridge(g.dtype)) for g in items]
                    rows.append(seen[id(items)])
                cache[seq] = rows
            return cache[seq]

        out: list[list[int | None]] = []
        for i, (_, _, items) in enumerate(results.blocks()):
            row: list[int | None] = []
            for j in range(len(items)):
                if not bound_at(limit)[i][j]:
                    row.append(None)
                    continue
                low, high = 0, limit  # bound at high; not at low (or low is 0)
                while high - low > 1:
                    middle = (low + high) // 2
                    low, high = (low, middle) if bound_at(middle)[i][j] else (middle, high)
                row.append(high)
            out.append(row)
        return out

    def _seq_search_names(self) -> dict[str, int | None]:
        """The search of ``_seq_found`` GEMM by GEMM, each found by its name at every seq
        probed."""
        first = self.reports[0]
        network = first.network
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

    @staticmethod
    def gemm_fields(result: GemmResult) -> dict[str, Any]:
        """A GEMM's JSON object at a point after its name: intensity, bound, time and predicted
        time (the same for every copy of a repeat: each reads its run's stored result)."""
        return {"intensity": result.gemm.intensity, "bound": result.bound,
                "time_s": result.time_s, "predicted_time_s": result.predicted_time_s}

    def to_dict(self, gemms: Callable[[Report], Any] | None = None,
                members: Callable[[Iterator[tuple[str, Any]]], Any] = dict) -> dict[str, Any]:
        """The sweep JSON contract of docs/design.md (plus ``dtype``, ``mode``, ``ridge``).
        ``gemms``: what to list as a point's ``gemms`` in place of each GEMM's dict
        (``{"name"} | gemm_fields``, every copy's, in numbering order); ``members``: what
        makes the objects of a value per GEMM name (``transitions``, ``seq_transitions``,
        ``transitions_by_seq``'s) from their pairs, a dict by default. ``output.whatif_sweep``
        gives both as what its JSON writes as it reads (0.9.0)."""
        def listed(report: Report) -> Any:
            return [{"name": name} | self.gemm_fields(r)
                    for name, _, _, r in named(report.results, gemm_of)]

        first = self.reports[0]
        rows = gemms or listed
        points = []
        for report in self.reports:
            totals = report.totals
            memory = report.memory
            points.append({
                "batch": report.network.batch, "seq": report.network.seq,
                "time_s": totals["time_s"],
                "memory_bytes": memory.total_bytes if memory else None,
                "fits": memory.fits if memory else None,
                "samples_per_s": self.rate(report, unit="samples"),
                "predicted_time_s": totals["predicted_time_s"],
                "predicted_samples_per_s": self.rate(report, True, "samples"),
                # of time_s and predicted_time_s, the forward work recomputation runs again
                "recompute_time_s": totals["recompute_time_s"],
                "predicted_recompute_time_s": totals["predicted_recompute_time_s"],
                **({"tokens_per_s": self.rate(report),
                    "predicted_tokens_per_s": self.rate(report, True)}
                   if self.unit == "tokens" else {}),
                "memory_bound_time_fraction": totals["memory_bound_time_fraction"],
                "predicted_gemm_time_s": totals["predicted_gemm_time_s"],
                "weights_from_dram": report.residency.from_dram if report.residency else None,
                "gemms": rows(report)}
                | served_fields(report)
                | ({"generation": report.generation.to_dict()} if report.generation else {}))
        seq_items = self.seq_transition_items()
        return {"model": first.network.name, "hardware": first.hardware.name,
                "dtype": first.dtype, "seq": first.network.seq, "mode": first.network.mode,
                "phase": first.network.step_phase,
                "recompute": first.network.step_recompute,
                "ridge": first.ridge,
                "prompt": first.generation.prompt if first.generation else None,
                "generate": first.generation.generate if first.generation else None,
                "point_step": point_step(first),
                "quantization_in_time": first.quantization,
                # 0.9.0: the GPUs each point is served over (sweep --tp); above 1 every figure
                # is one GPU's shard, throughput the group's, each point's tensor_parallel
                "tp": self.tp,
                # 0.9.0: the pipeline's stages (sweep --pp); above 1 every figure is one GPU's
                # of tp x pp, throughput the pipeline's with its batches in flight, each
                # point's pipeline_parallel
                "pp": self.pp,
                "prediction_basis": basis_of(first.hardware),
                "prediction_fit": fit_of(first.hardware),
                "calibration_library": library_of(first.hardware),
                "capacity_bytes": first.memory.capacity_bytes if first.memory else None,
                "capacity_basis": first.memory.capacity_basis if first.memory else None,
                "max_batch": self.max_batch, "max_seq": self.max_seq,
                "axis": self.axis, "batches": list(self.batches), "seqs": list(self.seqs),
                "points": points, "transitions": members(self.transition_items()),
                "transitions_basis": self.transitions_basis,
                "transitions_unknown": self.unknown_transitions,
                "step": first.step.to_dict(),  # the whole step's verdict at the first point
                "seq_transitions": None if seq_items is None else members(seq_items),
                "transitions_by_seq": [
                    {"seq": seq, "transitions": members(self.transition_items(r)),
                     "max_batch": self.max_batch_by_seq()[seq]}
                    for seq, r in self.first_at_each_seq().items()] if self.grid else None}

    def __repr__(self) -> str:
        """One line (the dataclass's own repr printed every report: 74 KB for 1..4096)."""
        swept = [f"{name} {values[0]}..{values[-1]} ({len(values)})" if len(values) > 1
                 else f"{name} {values[0]}"
                 for name, values in (("batch", self.batches), ("seq", self.seqs)) if values]
        g = self.reports[0].generation
        what = f"generations of prompt {g.prompt} + {g.generate}, " if g else ""
        served = (f" (one GPU of tp {self.tp} x pp {self.pp})" if self.pp > 1 else
                  f" (one GPU of tp {self.tp})" if self.tp > 1 else "")
        return (f"<Sweep {self.reports[0].network.name} on {self.hardware.name}{served}: "
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


class _OtherRuns(Exception):
    """A step searched at another seq is laid out in other runs than the first point's: the
    search goes GEMM by GEMM, by name (``Sweep._seq_search_names``)."""


def _transition(gemm: Gemm, hardware: HardwareSpec) -> int | None:
    """The smallest batch at which ``gemm`` is compute-bound on ``hardware`` (closed form,
    ``batch.min_compute_bound_batch``), or None if none is; a GEMM whose shape does not depend
    on the batch (no ``batch_dims``) 1 where it is compute-bound, else None."""
    ridge = hardware.ridge(gemm.dtype)
    if any(gemm.batch_dims):
        return min_compute_bound_batch(gemm, ridge)
    return 1 if roof_bound(gemm.intensity, ridge) == "compute" else None
