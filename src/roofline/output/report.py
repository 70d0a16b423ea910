"""Turning results into text: table, CSV, Markdown, JSON, HTML (the page itself is
``output.html``). Display only; numbers stay raw everywhere else. Prefixes are decimal (SI):
1 GB = 10^9 B, 1 TFLOP/s = 10^12 FLOP/s.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import RooflineError, option
from ..model.item_numbers import ItemNumbers
from ..model.repeats import MAX_LISTED, Layers, Numbered, distinct, named, repeated_count
from ..units import count, rate_unit, seconds, si, three_digits
from .advice import alignment_text, gemm_advice, gemm_warnings, past_memory, tier_hint
from .hardware import capacity_text
from .json import to_json
from .precision import precision_text
from .scaling import scaling_lines
from .serving_dp import dp_line
from .serving_dp import header_line as dp_header
from .serving_pp import header_line as pipeline_header
from .serving_pp import pipeline_line
from .serving_tp import comm_line, header_line, where_text
from .table import Fit, aligned_lines, aligned_shared, markdown_lines, markdown_text

if TYPE_CHECKING:
    from ..analysis.alignment import AlignmentNote
    from ..analysis.report import Report
    from ..hardware.spec import HardwareSpec
    from ..model.network import Network

PASS_SHORT = {"forward": "fwd", "backward-data": "bwd-data", "backward-weight": "bwd-wgt"}


def compact_names(names: Sequence[str] | ItemNumbers, limit: int = 4) -> str:
    """One label for coincident GEMMs: ``MM1,MM5``; runs of three or more become ``MM2-MM4``;
    past ``limit`` pieces the rest is counted: ``MM1,MM3,MM5,MM7,+4``. ``names`` may be the
    GEMMs' numbers as runs (``ItemNumbers``, a repeat's copies among them): the same label,
    its pieces counted run by run, no name written but those shown."""
    if isinstance(names, ItemNumbers):
        if names.prefix != "MM":  # (only GEMM names are read as numbers)
            return compact_names(names.names(), limit)
        shown, total = names.pieces(limit)
        texts = [f"MM{low}-MM{high}" if high > low else f"MM{low}" for low, high in shown]
        if total > limit:
            texts = texts[:limit - 1] + [f"+{total - limit + 1}"]
        return ",".join(texts)
    if not names:
        return ""
    numbers = [re.fullmatch(r"MM(\d+)", n) for n in names]
    if not all(numbers):
        pieces = list(names)
    else:
        pieces = _runs(sorted(int(m.group(1)) for m in numbers if m))
    if len(pieces) > limit:
        hidden = len(pieces) - limit + 1
        pieces = pieces[:limit - 1] + [f"+{hidden}"]
    return ",".join(pieces)


def _runs(numbers: list[int]) -> list[str]:
    """``[1, 2, 3, 5]`` -> ``["MM1-MM3", "MM5"]``: runs of three or more shortened."""
    pieces: list[str] = []
    start = prev = numbers[0]
    for value in numbers[1:] + [None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        if prev - start >= 2:
            pieces.append(f"MM{start}-MM{prev}")
        else:
            pieces += [f"MM{i}" for i in range(start, prev + 1)]
        start = prev = value if value is not None else prev
    return pieces


_COLUMNS = ("GEMM", "layer", "pass", "M", "N", "K", "FLOP", "bytes", "FLOP/B", "bound",
            "TFLOP/s", "time", "align")
_RATE_COLUMN = _COLUMNS.index("TFLOP/s")
_LEFT_COLUMNS = frozenset({0, 1, 2, 9, 12})  # text columns; numbers are right-aligned
_OP_COLUMNS = ("op", "layer", "pass", "kind", "FLOP", "bytes", "FLOP/B", "bound", "TFLOP/s",
               "time")
_OP_LEFT_COLUMNS = frozenset({0, 1, 2, 3, 7})
LAYER_COLUMN = 1  # the column a plain-text table cuts to fit its width (GEMMs and ops alike)


@dataclass(frozen=True)
class View:
    """What a human-readable report shows: ``gemms_only`` hides the non-GEMM ops; ``expand``
    shows every copy of a repeated layer (by default only the first, and a note); ``width``,
    the characters a plain-text table has (the terminal's, where the CLI knows it): a wider
    table has its layer names cut to their ends (``table.cut_end``); None, the width unknown
    (a pipe, a file, the library), every name whole. Markdown, CSV, JSON and HTML keep every
    name whole whatever the width."""

    gemms_only: bool = False
    expand: bool = False
    width: int | None = None

    @property
    def fit(self) -> Fit | None:
        """How a plain-text table fits ``width``: by its layer column."""
        return None if self.width is None else Fit(self.width, LAYER_COLUMN)


def report_json(report: Report, view: View = View()) -> str:
    """The JSON contract: every GEMM and op one by one, repeated layers included."""
    return to_json(report.to_dict())


class Scan(NamedTuple):
    """What ``Shown.scan`` reads of the rows: how many, the longest name and layer (in
    characters), and each distinct result by its id."""

    rows: int
    name_width: int
    layer_width: int
    results: dict[int, Any]


_NAME, _LAYER = itemgetter(0), itemgetter(1)


class Shown:
    """The GEMM or op results a table shows (``shown_results``): every one (``firsts``
    False), or each repeated layer's first copy only. Iterated, each result is built as it is
    read; ``named()`` gives (name, layer, a result of the same shape) without building any,
    which is what a deep model's table reads (300,000 rows, a few shapes)."""

    __slots__ = ("_items", "_firsts", "_what", "_scan", "_rows")

    def __init__(self, items: Sequence[Any], firsts: bool, what: Callable[[Any], Any]) -> None:
        self._items = items
        self._firsts = firsts
        self._what = what  # a result's GEMM or op
        self._scan: Scan | None = None
        self._rows: list[tuple[str, str, int, Any]] | None = None

    @classmethod
    def of(cls, results: Shown | Sequence[Any]) -> Shown:
        """``results`` as shown: a ``Shown`` as it is, a plain list of GEMM results all."""
        return results if isinstance(results, Shown) else cls(results, False, _gemm_of)

    def scan(self) -> Scan:
        """The rows' count, longest name and layer, and distinct results: read once."""
        if self._scan is None:
            rows = self._read()
            self._scan = Scan(len(rows), max(map(len, map(_NAME, rows)), default=0),
                              max(map(len, map(_LAYER, rows)), default=0),
                              {id(row[3]): row[3] for row in rows})
        return self._scan

    def named(self) -> Iterator[tuple[str, str, int, Any]]:
        """(name, layer, copy number, result) of every row in order; the result is the row's
        own or, in a run of layers alike, the one it repeats (whose name and layer are not the
        row's)."""
        return iter(self._read())

    def _read(self) -> list[tuple[str, str, int, Any]]:
        """``named``'s rows, read once and kept: a table reads them five times (widths, two
        kinds of notes, two tables), and a tuple a row costs less than making it again."""
        if self._rows is None:
            self._rows = list(named(self._items, self._what, self._firsts))
        return self._rows

    def __iter__(self) -> Iterator[Any]:
        """Each row's result, built as it is read (the rows' own names and layers)."""
        if not isinstance(self._items, Numbered):
            yield from (item for _, _, _, item in self._read())
            return
        build = self._items._build
        for name, layer, copy, item in self._read():
            yield build(item, name, layer, copy)

    def __len__(self) -> int:
        return self.scan().rows

    def __bool__(self) -> bool:
        return next(self.named(), None) is not None


def shown_results(report: Report, view: View) -> tuple[Shown, Shown]:
    """The GEMM and op results a table shows under ``view``."""
    ops: Sequence[Any] = () if view.gemms_only else report.ops
    return (Shown(report.results, not view.expand, _gemm_of),
            Shown(ops, not view.expand, _op_of))


def _gemm_of(result: Any) -> Any:
    return result.gemm


def _op_of(result: Any) -> Any:
    return result.op


def check_listed(reports: Sequence[Report], fmt: str, view: View) -> None:
    """A format that lists every GEMM and op one by one (JSON, CSV, ``expand``) prints at most
    ``MAX_LISTED`` rows; over that, RooflineError before anything is printed. The table,
    Markdown and HTML show a repeated layer's rows once, so they have no such cap."""
    if fmt not in ("json", "csv") and not view.expand:
        return
    rows = sum(len(r.results) + len(r.ops) for r in reports)
    if rows > MAX_LISTED:
        how = option("format", fmt) if fmt in ("json", "csv") else option("expand")
        raise RooflineError(f"{reports[0].network.source}: the step has {rows:,} GEMMs and ops; "
                            f"{how} lists each one and is capped at {MAX_LISTED:,} rows (the "
                            f"table shows a repeated layer once)")


def _rows(report: Report, results: Shown | Sequence[Any]
          ) -> tuple[Iterator[tuple[str, str, int]], dict[int, tuple[str, ...]], list[int]]:
    """The GEMM table as rows (name, layer, the key of the rest in the second value), the rest
    of each distinct result's row, and the widest name and layer. Every cell but the name and
    the layer is a function of the GEMM's shape (``Gemm.shape_key``), so it is formatted once
    per shape: a deep model has 100,000s of rows and few shapes, and its rows are made as the
    table is written (``table.aligned_shared``)."""
    shown = Shown.of(results)
    scan = shown.scan()
    shapes: dict[tuple[object, ...], tuple[str, ...]] = {}
    tails = {key: shapes.setdefault(r.gemm.shape_key, tuple(_row(report, r)[2:]))
             for key, r in scan.results.items()}
    rows = ((name, layer, id(r)) for name, layer, _, r in shown.named())
    return rows, tails, [scan.name_width, scan.layer_width]


def _row(report: Report, result) -> list[str]:
    g = result.gemm
    count = f"{g.batch_count}x " if g.batch_count > 1 else ""
    return [g.name, g.layer, PASS_SHORT[g.pass_], f"{count}{g.m}", str(g.n),
            str(g.k), si(g.flops, ""), si(g.bytes, "B"), f"{g.intensity:.1f}", result.bound,
            three_digits(result.attainable_flops_per_s / 1e12), seconds(result.time_s),
            "ok" if result.aligned else "NO"]


def _op_row(result) -> list[str]:
    o = result.op
    return [o.name, o.layer, o.pass_, o.kind, si(o.flops, ""), si(o.bytes, "B"),
            f"{o.intensity:.2f}", result.bound, three_digits(result.attainable_flops_per_s / 1e12),
            seconds(result.time_s)]


def step_text(network) -> str:
    """``batch 8, seq 4096, inference (decode)``: the step a report describes (the phase only
    for a model with a sequence, where it changes anything); a training step that recomputes
    activations says how (``batch 8, seq 4096, train, recompute full``), its time holding the
    forward work run again (``analysis.recompute``; a captured module's does not)."""
    setting = recompute_setting(network)
    again = f", {setting}" if setting else ""
    if network.seq is None:
        return f"batch {network.batch}, {network.mode}{again}"
    mode = network.mode if network.mode == "train" else f"{network.mode} ({network.step_phase})"
    return f"batch {network.batch}, seq {network.seq}, {mode}{again}"


def recompute_setting(network) -> str:
    """``recompute full``: a training step's recomputation, where its time holds the forward
    work run again (``analysis.recompute``); "" for none, outside training and for a captured
    module, whose step is what its run recorded."""
    if network.step_recompute == "none" or network.captured_batch is not None:
        return ""
    return f"recompute {network.recompute}"


def tf32_text(report: Report) -> str:
    """The fp32 GEMMs that run in TF32 on this GPU (``GemmShape.tf32``: a captured module's
    convolutions under torch's default ``cudnn.allow_tf32``), named; "" for none."""
    if report.network.dtype == "tf32" or not any(
            r.gemm.dtype == "tf32" for r in distinct(report.results)):
        return ""  # asked of each run once: a deep model's rows are never built for it
    names = [name for name, _, _, r in named(report.results, lambda r: r.gemm)
             if r.gemm.dtype == "tf32"]
    return (f"{listed(names)} run in TF32, as torch runs fp32 GEMMs on this GPU where its "
            f"flags allow (convolutions: torch.backends.cudnn.allow_tf32, on by default; matmuls: "
            f"torch.backends.cuda.matmul.allow_tf32): at the "
            f"{report.hardware.peak_tflops['tf32']:g} TFLOP/s TF32 peak")


def _header(report: Report) -> str:
    net, hw = report.network, report.hardware
    tf32 = tf32_text(report)
    return (f"{net.name} on {hw.name}: {report.dtype}, {step_text(net)}\n"
            f"precision: {precision_text(net)}\n"
            + (textwrap.fill(f"tf32: {tf32}", 100, subsequent_indent="  ") + "\n"
               if tf32 else "")
            + f"{ridge_text(report)}"
            + ("\n" + quantization_line(True, [hw]) if report.quantization else "")
            + ("\n" + textwrap.fill(header_line(report.tensor_parallel), 100,
                                     subsequent_indent="  ")
               if report.tensor_parallel else "")
            + ("\n" + textwrap.fill(pipeline_header(report.pipeline_parallel), 100,
                                     subsequent_indent="  ")
               if report.pipeline_parallel else "")
            + ("\n" + textwrap.fill(dp_header(report.data_parallel), 100,
                                     subsequent_indent="  ")
               if report.data_parallel else ""))


def ridge_text(report: Report) -> str:
    """``ridge 153.0 FLOP/B = dense peak 312 TFLOP/s / 2039 GB/s (datasheet)``; an integer
    dtype's peak in TOPS (``units.rate_unit``); a measured entry saved past the probe's own
    checks says so there too (``(measured, saved past its probe's checks: see the
    warnings)``, ``output.times.forced_warning``)."""
    forced = (", saved past its probe's checks: see the warnings"
              if report.hardware.forced_past else "")
    return (f"ridge {report.ridge:.1f} FLOP/B = dense peak {report.peak_flops_per_s / 1e12:g} "
            f"{rate_unit(report.dtype)} / {report.bandwidth_bytes_per_s / 1e9:g} GB/s "
            f"({report.hardware.origin}{forced})")


def gemm_columns(report: Report) -> tuple[str, ...]:
    """The GEMM table's header: its rate column in the unit of the report's dtype, TOPS for
    int8 (``units.rate_unit``), as the ridge line above it."""
    columns = list(_COLUMNS)
    columns[_RATE_COLUMN] = rate_unit(report.dtype)
    return tuple(columns)


def quantization_line(detail: bool, hardware: Sequence[HardwareSpec]) -> str:
    """The header line of a report whose compute-bound times carry tile/wave losses; ``detail``
    says which tile and split-K (analyze), else the short form (compare, sweep). A device of
    ``hardware`` without a tile model (a CPU, a GPU before Volta: ``no_tile_model``) is named
    with why nothing changed there: "on" alone read as if its times had been adjusted."""
    from ..analysis.quantization import no_tile_model

    without = [(spec.name, why) for spec in hardware if (why := no_tile_model(spec))]
    if without and len(without) == len(hardware):
        return "quantization: on, no effect: " + "; ".join(f"{name} is {why}"
                                                           for name, why in without)
    how = ("efficiency of the best candidate tile, after split-K where chosen" if detail
           else "efficiency")
    return (f"quantization: on (compute-bound GEMM times divided by the tile/wave {how})"
            + "".join(f"; no effect on {name}, {why}" for name, why in without))


def totals_line(report: Report) -> str:
    t = report.totals
    again = t["recompute_time_s"]  # the forward run again: in the time, not in the FLOPs
    head = f"total: {si(t['flops'], 'FLOP')}, {si(t['bytes'], 'B')}, {seconds(t['time_s'])}"
    if not report.ops:
        text = (f"{head}" + (f" (GEMMs {seconds(t['gemm_time_s'])}, recomputation "
                             f"{seconds(again)})" if again else "")
                + f"; {t['memory_bound_time_fraction']:.0%} of the time in memory-bound "
                f"GEMMs; {_parameters(t['parameters'], t['active_parameters'])}")
    else:
        text = (f"{head} (GEMMs {seconds(t['gemm_time_s'])}, other ops "
                f"{seconds(t['op_time_s'])}" + (f", recomputation {seconds(again)}" if again
                                                 else "")
                + (f", tensor-parallel communication "
                   f"{seconds(report.tensor_parallel.step.roof_s)}"
                   if report.tensor_parallel else "")
                + (f", pipeline hand-offs "
                   f"{seconds(report.pipeline_parallel.step.transfer_s)}"
                   if report.pipeline_parallel else "")
                + (f", experts' dispatch and combine "
                   f"{seconds(report.data_parallel.step.roof_s)}"
                   if report.data_parallel and report.data_parallel.moe else "")
                + f"); {t['memory_bound_time_fraction']:.0%} of the time "
                f"memory-bound; {_parameters(t['parameters'], t['active_parameters'])}")
    pp = report.pipeline_parallel
    if pp is not None:  # the stages' figures summed: not one GPU's, as the header says the rest
        text += f"; these totals: one batch through one GPU of each of the {pp.pp} stages"
    left = [_not_counted_text(report, key) for key in report.not_counted()]
    uncosted = report.network.uncosted
    return text + (f"; not counted: {', '.join(left)}" if left else "") + (
        f"; FLOPs unknown (their bytes counted): {', '.join(uncosted)}" if uncosted else "")


#: What ``Report.not_counted`` keys mean to a reader.
_NOT_COUNTED = {
    "optimizer": "the optimizer update (optimizer none: give --optimizer sgd|adam)",
    "loss": "the loss and its gradient",
    "dropout": "dropout (the model's rate is 0)",
    "recomputation": "recomputation (a captured module's step is what its run recorded: "
                     "recompute changes neither its time nor its memory)",
}


#: What each ``recompute`` setting runs again in the backward pass
#: (``model.layers.recomputed``), in words: under ``full``, by the kind of layer that does
#: (a transformer block, False; a linear layer with an activation, True), only those the
#: step has (``recomputed_text``).
RECOMPUTED_TEXT = {
    "full": {False: "each transformer block's whole forward, from the input it keeps",
             True: "each linear layer's product and bias before its activation, from the "
                   "input it keeps"},
    "selective": {False: "each naive-attention block's attention core (QK^T, softmax, its "
                         "dropout, attention over V)"},
}
#: Why a setting runs nothing again in a step that has nothing it recomputes.
NOTHING_AGAIN = {
    "full": "no layer drops a tensor its backward pass reads (a transformer block or a linear "
            "layer with an activation would)",
    "selective": "flash attention's backward already recomputes the scores (in its "
                 "flash-attention-backward op) and keeps no s x s matrix; with --attention "
                 "naive its attention core would run again",
    "selective-blockless": "selective recomputes a transformer block's naive attention core, "
                           "and the step has no transformer block",
}


def recomputed_text(report: Report) -> str:
    """What ``report``'s step runs again in its backward pass, naming only the kinds of layer
    that do here: a GPT-2 has no linear layer with an activation, an MLP no transformer
    block."""
    from ..model.layers import recomputed
    from ..model.layers.linear import Linear

    net = report.network
    how, step = net.recompute, net.step()
    kinds = {isinstance(run.layer, Linear) for run in net.layer_runs
             if recomputed(run.layer, step, how)}
    parts = RECOMPUTED_TEXT[how]
    return " and ".join(text for kind, text in parts.items() if kind in kinds or not kinds)


def recompute_line(report: Report) -> str | None:
    """Recomputation's part of a training step, in one sentence: what it adds to the roofline
    and the predicted step time (``Report.totals``' ``recompute_time_s``,
    ``predicted_recompute_time_s``), what runs again and its FLOPs against the model's (HFU
    over MFU); or that it runs nothing again here, and why; None without recomputation, outside
    training, and for a captured module (``not_counted`` says so)."""
    net, t = report.network, report.totals
    how = net.recompute
    if not recompute_setting(net):  # none, outside training, or a captured module
        return None
    if not (t["recompute_time_s"] or t["recompute_flops"]):
        from ..model.layers.transformer import Transformer

        blockless = how == "selective" and not any(isinstance(run.layer, Transformer)
                                                   for run in net.layer_runs)
        why = NOTHING_AGAIN["selective-blockless" if blockless else how]
        return f"recompute {how}: nothing is run again here: {why}"
    more = f", {t['recompute_flops'] / t['flops']:.0%} above the model's" if t["flops"] else ""
    return (f"recompute {how}: +{seconds(t['recompute_time_s'])} roof, "
            f"+{seconds(t['predicted_recompute_time_s'])} predicted, in the step time above: "
            f"{recomputed_text(report)}, run again in the backward pass "
            f"({si(t['recompute_flops'], 'FLOP')} more{more})")


#: Dropout left out of a step read from a config.json: the adapters read no dropout key
#: (``model.hf``), so its rate is not the model's 0 but unread; transformers' GPT2Config
#: (``resid_pdrop``, ``embd_pdrop``, ``attn_pdrop``) and BertConfig (``hidden_dropout_prob``,
#: ``attention_probs_dropout_prob``) default to 0.1.
CONFIG_DROPOUT = ("dropout (a config.json's rates are not read: the blocks are taken without "
                  "it, where transformers trains GPT-2 and BERT at 0.1; a model.yaml block's "
                  "dropout counts it)")


def _not_counted_text(report: Report, key: str) -> str:
    """What ``Report.not_counted``'s ``key`` means to a reader of this report: dropout from a
    config.json is unread, not 0 (``CONFIG_DROPOUT``)."""
    if key == "dropout" and report.network.source.endswith(".json"):
        return CONFIG_DROPOUT
    return _NOT_COUNTED[key]


#: How each part of ``Memory`` reads in a sentence.
PART_NAMES = {"weights": "weights", "kv_cache": "KV cache", "activations": "activations",
               "gradients": "gradients", "optimizer": "optimizer states",
               "workspace": "workspace allowance"}  # assumed: memory.WORKSPACE_BYTES


def memory_line(report: Report) -> str | None:
    """The step's memory in one sentence: the total by part against the capacity, with a
    "does not fit" verdict, and the largest batch (at this seq) and seq (at this batch) that
    fit."""
    memory = report.memory
    if memory is None:
        return None
    net, g = report.network, report.generation
    if g is not None and g.memory_step == "prefill":  # the parts are the prefill's
        net = g.prefill.network
    parts = ", ".join(f"{PART_NAMES[part]} {si(value, 'B')}" + (
        _window_text(net) if part == "kv_cache" else
        _copies_text(memory) if part == "weights" else "")
                      for part, value in memory.parts.items() if value)
    total = si(memory.total_bytes, "B")
    if memory.not_counted:
        parts += "; not counted: " + ", ".join(
            f"{PART_NAMES[part]} (a capture does not record them)" for part in memory.not_counted)
    left_out = optimizer_states_text(report.network)
    if left_out:
        parts += f"; not counted: {left_out}"
    pp = report.pipeline_parallel
    # one GPU of the most loaded stage, the KV cache of every batch in flight
    stage = (f" (one GPU of stage {pp.stages.heaviest}, the most loaded; the KV cache of its "
             f"layers for the {pp.in_flight} batches in flight, each batch below one of them)"
             if pp is not None else "")
    if memory.capacity_bytes is None:
        return (f"memory{stage}: {total} ({parts}); {report.hardware.name} states no "
                f"capacity, so whether it fits is not checked")
    capacity = capacity_text(memory.capacity_bytes, memory.capacity_basis)
    label = "memory" + peak_text(report) + stage
    if memory.fits:
        head = f"{label}: {total} of {capacity} ({parts})"
    else:
        head = f"{label}: does not fit: needs {total} of {capacity} ({parts})"
    if g is not None:
        return head + "; " + _generation_fitting(memory, net, g)
    return head + "; " + _largest_fitting(memory, net)


def _copies_text(memory) -> str:
    """`` (256 MB of them MLA's 16-bit W_UK and W_UV)``: the copies vLLM keeps beside a
    quantized ``kv_b`` (``Memory.dequantized_bytes``); "" for none."""
    if not memory.dequantized_bytes:
        return ""
    return f" ({si(memory.dequantized_bytes, 'B')} of them MLA's 16-bit W_UK and W_UV)"


def optimizer_states_text(network: Network) -> str | None:
    """``optimizer states (optimizer none: Adam's fp32 states would add 14.8 GB; give
    --optimizer adam)``: what a training step without an optimizer leaves out of its memory
    (``memory.optimizer_left_out``), so that its fit is not read as a training run's; None
    where nothing is left out."""
    from ..analysis.memory import optimizer_left_out

    extra = optimizer_left_out(network)
    if extra is None:
        return None
    return (f"optimizer states (optimizer none: Adam's fp32 states would add "
            f"{si(extra, 'B')}; give --optimizer adam)")


def peak_text(report: Report) -> str:
    """A generation's memory is its larger step's: `` at the generation's peak, the prefill
    (2048 tokens a sequence)`` or `` ..., the last decode step (a KV cache of 2559 tokens)``;
    empty for one step."""
    g = report.generation
    if g is None:
        return ""
    if g.memory_step == "prefill":
        return f" at the generation's peak, the prefill ({count(g.prompt, 'token')} a sequence)"
    return (f" at the generation's peak, the last decode step (a KV cache of "
            f"{g.prompt + g.generate - 1} tokens)")


def _generation_fitting(memory, net, g) -> str:
    """``the whole generation fits up to batch 147, and a prompt up to the model's context
    (8192) at batch 8``: the batch fitting both steps; the longest prompt (the prefill the
    larger) or KV cache (the last decode step) fitting at this batch."""
    if memory.max_batch is None:
        return f"captured at batch {net.batch}, so no other batch is judged"
    text = whole_generation_text(memory.max_batch)
    limit = prefill_limit_text(g.decode_max_batch)
    if not memory.max_batch:
        return text + limit
    what = "a prompt" if g.memory_step == "prefill" else "a KV cache"
    if memory.seq_limit == "context":
        return text + f", and {what} up to the model's context ({memory.max_seq}) at batch " \
            f"{net.batch}" + limit
    if not memory.max_seq:
        return text + limit
    return text + f", and {what} up to {memory.max_seq} tokens at batch {net.batch}" + limit


def whole_generation_text(max_batch: int) -> str:
    """``the whole generation fits up to batch 147`` (its prefill and its last decode step),
    or that not even batch 1 does (``max_batch`` 0)."""
    if not max_batch:
        return "not even batch 1 fits the whole generation"
    return f"the whole generation fits up to batch {max_batch}"


def prefill_limit_text(decode_max_batch: int | None) -> str:
    """``; its prefill, every prompt of the batch at once, is the limit: the last decode step
    alone fits up to batch 432 (...)`` where a generation's prefill fits fewer sequences than
    its last decode step (``Generation.decode_max_batch``), else empty."""
    if decode_max_batch is None:
        return ""
    return (f"; its prefill, every prompt of the batch at once, is the limit: the last decode "
            f"step alone fits up to batch {decode_max_batch} (a server that prefills a few "
            f"sequences, or chunks, at a time)")


def _window_text(network) -> str:
    """``: the sliding window's last 4096 of 32768 tokens`` when the blocks' window keeps the
    KV cache shorter than the sequence (``Transformer.active_window``), else empty."""
    from ..model.layers import Transformer

    seq = network.seq
    windows = {run.layer.active_window for run in network.layer_runs
               if isinstance(run.layer, Transformer)}  # a repeat's copies alike: none built
    if seq is None or len(windows) != 1:  # no blocks, or blocks of several windows
        return ""
    (window,) = windows
    return f": the sliding window's last {window} of {seq} tokens" if 0 < window < seq else ""


def step_line(report: Report) -> str:
    """The whole step's verdict (``Report.step``): from which batch it is compute-bound, or
    why no batch makes it so."""
    v = report.step
    if v.captured_batch is not None:
        return (f"step: not judged across batches: the module was captured at batch "
                f"{v.captured_batch} (capture it with inputs of another batch to see that one)")
    if v.batch is not None:
        text = (f"step: compute-bound from batch {v.batch} (the whole step's FLOP time reaches "
                f"its byte time)")
        if v.fits is False:
            text += (f", which does not fit in memory (at most batch {v.max_batch})"
                     if v.max_batch else ", which does not fit in memory")
        return text
    from ..analysis.step import SPARSE

    part = ("the GEMMs make" if v.limiter == "gemm" else "the sparse linears make"
            if v.limiter == SPARSE else f"{v.limiter} (an op) makes")
    sample = "sequence" if report.network.seq is not None else "sample"
    limit = (f"its intensity tends to {v.intensity_limit:.1f} FLOP/B (ridge "
             f"{report.ridge:.1f})" if v.intensity_limit is not None else "")
    own = (f" at {v.limiter_intensity:.1f} FLOP/B" if v.limiter_intensity is not None else "")
    return (f"step: memory-bound at every batch: {limit}; {part} {v.limiter_share:.0%} of "
            f"the bytes each {sample} adds{own}")


def generation_line(report: Report) -> str | None:
    """A generation in one sentence: TTFT, TPOT, latency, tokens/s (``report.generation``)."""
    g = report.generation
    if g is None:
        return None
    where = where_text(report)
    sent = ", all-reduces included" if report.tensor_parallel else ""
    if report.pipeline_parallel:
        sent += ", one batch through every stage, hand-offs included"
    text = (f"generation: prompt {g.prompt} + {g.generate} tokens, batch {g.batch}: time to "
            f"first token {seconds(g.ttft_s)} ({prefill_text(g)}{sent})")
    if g.tpot_s is not None:
        text += f"; time per output token {seconds(g.tpot_s)} ({decode_text(g)}{sent})"
    text += (f"; latency {seconds(g.latency_s)}; {si(g.tokens_per_s_per_sequence, '')}"
             f"tokens/s per sequence, {si(g.tokens_per_s, '')}tokens/s {where} "
             f"(roofline times: lower bounds); predicted: time to first token "
             f"{seconds(g.predicted_ttft_s)}")
    if g.predicted_tpot_s is not None:
        text += f", time per output token {seconds(g.predicted_tpot_s)}"
    return text + (f", latency {seconds(g.predicted_latency_s)}, "
                   f"{si(g.predicted_tokens_per_s, '')}tokens/s {where} (the prediction's "
                   f"basis above); the table is the last step")


def prefill_text(g) -> str:
    """What a generation's time to first token is: ``prefill, last-token logits``."""
    return "prefill, " + ("last-token logits" if g.logits == "last" else "every token's logits")


def decode_text(g) -> str:
    """What a generation's time per output token is: ``mean of 255 decode steps, KV cache
    1025 to 1279 tokens``."""
    first, last = g.prompt + 1, g.prompt + g.generate - 1
    cache = f"{first} to {last}" if last > first else f"{first}"
    return f"mean of {count(g.decode_steps, 'decode step')}, KV cache {cache} tokens"


def _largest_fitting(memory, net) -> str:
    """``fits up to batch 61 at seq 2048, or up to seq 1952 at batch 64``."""
    seq = f" at seq {net.seq}" if net.seq is not None else ""
    if memory.max_batch is None:
        return f"captured at batch {net.batch}, so no other batch is judged"
    if not memory.max_batch:
        return f"not even batch 1 fits{seq}"
    text = f"fits up to batch {memory.max_batch}{seq}"
    if memory.max_seq is None:
        return text
    if memory.seq_limit == "context":
        return text + f", and up to the model's context ({memory.max_seq}) at batch {net.batch}"
    if not memory.max_seq:
        return text
    return text + f", or up to seq {memory.max_seq} at batch {net.batch}"


def no_place_text(kinds: list[str]) -> str:
    """Ops without FLOPs (a gather, a copy into the KV cache) a roofline chart leaves out, one
    kind per op, in words (the HTML chart's caption, the matplotlib chart's axis label)."""
    named = ", ".join(dict.fromkeys(kinds))
    return (f"1 op without FLOPs ({named}) has no place on the chart." if len(kinds) == 1 else
            f"{len(kinds)} ops without FLOPs ({named}) have no place on the chart.")


def _parameters(count: int, active: int) -> str:
    text = f"{si(count, '').rstrip()} parameter{'' if count == 1 else 's'}"
    return text + (f" ({si(active, '').rstrip()} active a token: the experts it is not routed "
                   f"to left out)" if active != count else "")


def repeat_note(report: Report, view: View) -> str | None:
    """Says how many rows a table hides because they repeat the first copy of a layer."""
    hidden = repeated_count(report.results, lambda r: r.gemm.copy) + repeated_count(
        report.ops, lambda r: r.op.copy)
    if view.expand or not hidden:
        return None
    copies = sum(1 for copy in report.network.copies if copy) if not isinstance(
        report.network.layers, Layers) else report.network.layers.repeated()
    return (f"{copies} repeated layer copies ({hidden} rows) not shown: each repeats the rows "
            f"of its first copy; the totals count every copy (--expand shows all)")


_TIER_REASON = {
    "error": "{dtype} GEMM kernels require N and K in multiples of {multiple} (torch "
             "_scaled_mm, cuBLASLt)",
    "warning": "16-byte rule: multiples of {multiple} for {dtype} Tensor Cores",
    "advice": "128-byte tier: multiples of {multiple} run best here",
}


def _scaling_lines(report: Report) -> list[str]:
    """The streamed-input verdict and the data-parallel table (``--stream-input``,
    ``--data-parallel``), when asked for."""
    scaling = getattr(report, "scaling", None)
    lines = [wrapped for line in (scaling_lines(scaling) if scaling else []) for wrapped in (
        textwrap.wrap(line, width=100, subsequent_indent="  ", break_on_hyphens=False)
        if len(line) > 100 else [line])]
    return ["", *lines] if lines else []


class _Group:
    """The GEMMs and layer dimensions one alignment note is about (``_alignment_groups``): the
    GEMMs' names in order, and each dimension's layers by role, with the order they came in
    (a deep model's 300,000 GEMMs add their layers without a string made for each)."""

    __slots__ = ("note", "names", "roles")

    def __init__(self, note: AlignmentNote) -> None:
        self.note = note
        self.names: list[str] = []
        self.roles: dict[str, dict[str, int]] = {}  # role -> layer -> when it came

    def labels(self) -> list[str]:
        """``fc2.out``, ``fc3.in``, ... in the order they came (``batch`` for the batch)."""
        came = sorted((when, layer, role) for role, layers in self.roles.items()
                      for layer, when in layers.items())
        return ["batch" if role == "batch" else _dimension_label(layer, role)
                for _, layer, role in came]


def _dimension_label(layer: str, role: str) -> str:
    """``fc2`` and ``out`` as ``fc2.out``; a role already naming the layer's part, as a
    transformer block's does (``block1.ffn_up`` and ``ffn_up.out``), once: ``block1.ffn_up.out``
    (it read ``block1.ffn_up.ffn_up.out``)."""
    part, _, rest = role.rpartition(".")
    if part and (layer == part or layer.endswith("." + part)):
        return f"{layer}.{rest}"
    return f"{layer}.{role}"


def _alignment_groups(gemms: Shown | Sequence[Any], max_batch: int | None = None
                      ) -> list[tuple[str, str]]:
    """Alignment notes grouped by the dimension value they are about, most severe tier first,
    as ``(tier, text)``: ``("advice", "width 1000 (fc2.out, fc3.in): MM2, MM3, MM4: pad to 1024
    (...)")``. A batch padded past ``max_batch``, the largest that fits in memory, says so."""
    from ..analysis.alignment import TIERS

    groups: dict[tuple[int, int, int], _Group] = {}
    # GEMMs of one shape share their notes (analysis.report): each tuple read once, into the
    # group each note goes to and the layers of its role there
    read: dict[int, list[tuple[_Group, dict[str, int], bool]]] = {}
    came = itertools.count()
    for name, layer, _, result in Shown.of(gemms).named():
        if not result.alignment:
            continue
        targets = read.get(id(result.alignment))
        if targets is None:
            targets = read[id(result.alignment)] = []
            for note in result.alignment:
                role = note.role.split(" x ")[0]  # a convolution's "in_channels x R x S"
                key = (TIERS.index(note.tier), note.value, note.multiple)
                group = groups.setdefault(key, _Group(note))
                targets.append((group, group.roles.setdefault(role, {}), role == "batch"))
        for group, layers, batch in targets:
            own = "batch" if batch else layer
            if own not in layers:
                layers[own] = next(came)
            if not group.names or group.names[-1] is not name:  # (a GEMM's two notes alike)
                group.names.append(name)
    lines = []
    for (_, value, _), group in sorted(groups.items(), key=lambda i: i[0]):
        note, labels = group.note, group.labels()
        noun = "batch" if labels == ["batch"] else (
            "width" if note.role in ("in", "out", "batch") else
            "channels" if "channels" in note.role else "dimension")
        where = "" if labels == ["batch"] else f" ({listed(labels)})"
        reason = _TIER_REASON[note.tier].format(dtype=note.dtype, multiple=note.multiple)
        fits = past_memory(note.pad_to, max_batch) if labels == ["batch"] else ""
        lines.append((note.tier, f"{noun} {value}{where}: {listed(group.names)}: "
                                 f"pad to {note.pad_to} ({reason}){tier_hint(note)}{fits}"))
    return lines


def _max_batch(report: Report | None) -> int | None:
    """The largest batch that fits in the device's memory (a whole generation's), where the
    report knows it: what a batch padded for alignment is held to."""
    memory = report.memory if report is not None else None
    return memory.max_batch if memory is not None else None


#: A note names at most this many GEMMs or layers, then counts the rest.
NOTE_NAMES = 24


def listed(names: list[str]) -> str:
    """``MM1, MM2, MM3``; past ``NOTE_NAMES`` names the rest counted (``..., MM24 and 29,976
    more``): a note about most GEMMs of a deep model stays a line, and JSON and CSV list every
    GEMM's own warnings and advice."""
    if len(names) <= NOTE_NAMES:
        return ", ".join(names)
    return f"{', '.join(names[:NOTE_NAMES])} and {len(names) - NOTE_NAMES:,} more"


def _other_notes(gemms: Shown | Sequence[Any]) -> list[tuple[str, str]]:
    """Every sentence that is not an alignment note, once, with the GEMMs it is about, as
    ``(tier, text)``: a tile/wave warning is a ``warning``, batch advice ``advice``."""
    others: dict[str, tuple[str, list[str]]] = {}
    said: dict[tuple[object, ...], list[list[str]]] = {}  # a shape's sentences, once
    read: dict[int, list[list[str]]] = {}  # by the result read: one per shape in a deep model
    for name, _, _, r in Shown.of(gemms).named():
        lists = read.get(id(r))
        if lists is None:
            lists = said.get(r.gemm.shape_key)
            if lists is None:
                aligned = {alignment_text(note, r.max_batch) for note in r.alignment}
                lists = said[r.gemm.shape_key] = [
                    others.setdefault(text, (tier, []))[1]
                    for tier, sentences in (("warning", gemm_warnings(r)),
                                            ("advice", gemm_advice(r)))
                    for text in sentences if text not in aligned]
            read[id(r)] = lists
        for names in lists:
            names.append(name)
    return [(tier, f"{listed(names)}: {text}") for text, (tier, names) in others.items()]


def _notes(report: Report, gemms: Shown | Sequence[Any]) -> list[str]:
    """Warnings and advice as read, for the GEMMs a table shows: alignment grouped by dimension
    value and tier, then every other sentence once, with the GEMMs it is about (``MM4, MM5: no
    batch reaches ...``). JSON and CSV keep the per-GEMM lists."""
    return [f"  warning: {text}" for text in report.warnings] + [
        f"  {tier}: {text}" for tier, text in _alignment_groups(gemms, _max_batch(report))] + [
        f"  {text}" for _, text in _other_notes(gemms)]


def notes_by_tier(gemms: Shown | Sequence[Any], report: Report | None = None
                  ) -> dict[str, list[str]]:
    """The same notes grouped by tier, most severe first (``error``, ``warning``, ``advice``;
    empty tiers left out), the ``report``'s own warnings first among the warnings: the HTML
    page's advice section."""
    from ..analysis.alignment import TIERS

    tiers: dict[str, list[str]] = {tier: [] for tier in TIERS}
    own = [("warning", text) for text in report.warnings] if report is not None else []
    for tier, text in own + _alignment_groups(gemms, _max_batch(report)) + _other_notes(gemms):
        tiers[tier].append(text)
    return {tier: texts for tier, texts in tiers.items() if texts}


def _time_section(report: Report, gemms: Shown | Sequence[Any], as_markdown: bool = False
                  ) -> Iterator[str]:
    """Roof vs predicted (vs measured) per GEMM: output.times (nothing for a model
    without GEMMs, such as a sparse-only one); its table's lines made as they are read."""
    if not gemms:
        return
    from .times import _LEFT, time_lines, time_rows

    header, rows, tails, widths = time_rows(report, gemms)
    table = (markdown_lines(header, ((name, *tails[key]) for name, key in rows), _LEFT)
             if as_markdown else aligned_shared(header, rows, tails, _LEFT, widths))
    lines = time_lines(report) if as_markdown else [
        part for line in time_lines(report) for part in textwrap.wrap(
            line, width=100, subsequent_indent="  ", break_on_hyphens=False)]
    yield from ["", *(f"{markdown_text(line)}  " if as_markdown else line for line in lines), ""]
    yield from table


def report_table(report: Report, view: View = View()) -> str:
    """Plain-text tables (GEMMs, then the other ops), layer names cut to fit ``view.width``
    where it is given, with totals, warnings and advice below, wrapped at 100 columns."""
    return "".join(f"{line}\n" for line in report_table_lines(report, view))


def report_table_lines(report: Report, view: View = View()) -> Iterator[str]:
    """``report_table``'s lines, made as they are read (the CLI writes a deep model's table
    line by line, never holding its 1,000,000 lines at once). What follows the tables (totals,
    the step's verdict, notes) is made before the first line, so that a failure there leaves
    nothing half written."""
    gemms, ops = shown_results(report, view)
    note = repeat_note(report, view)
    end = ["", *textwrap.wrap(totals_line(report), width=100)]
    again = recompute_line(report)
    end += textwrap.wrap(again, width=100, subsequent_indent="  ") if again else []
    sent = comm_line(report)
    end += textwrap.wrap(sent, width=100, subsequent_indent="  ") if sent else []
    piped = pipeline_line(report)
    end += textwrap.wrap(piped, width=100, subsequent_indent="  ") if piped else []
    ranks = dp_line(report)
    end += textwrap.wrap(ranks, width=100, subsequent_indent="  ") if ranks else []
    memory = memory_line(report)
    end += textwrap.wrap(memory, width=100, subsequent_indent="  ") if memory else []
    end += textwrap.wrap(step_line(report), width=100, subsequent_indent="  ")
    generated = generation_line(report)
    end += textwrap.wrap(generated, width=100, subsequent_indent="  ") if generated else []
    end += textwrap.wrap(note, width=100) if note else []
    end += _scaling_lines(report)
    notes = [wrapped for note in _notes(report, gemms) for wrapped in (
        textwrap.wrap(note, width=100, subsequent_indent=" " * 7) if len(note) > 100 else [note])]
    if notes:
        end += ["", "warnings and advice:", *notes]
    yield _header(report)
    if report.results:
        yield ""
        rows, tails, widths = _rows(report, gemms)
        yield from aligned_shared(gemm_columns(report), rows, tails, _LEFT_COLUMNS, widths,
                                  view.fit)
    yield from _time_section(report, gemms)
    if ops:
        yield from ["", "non-GEMM ops:" if report.results else "no GEMMs; ops:"]
        yield from aligned_lines(_OP_COLUMNS, [_op_row(r) for r in ops], _OP_LEFT_COLUMNS,
                                 view.fit)
    yield from end


_CSV_FIELDS = ("name", "layer", "pass", "kind", "m", "n", "k", "batch_count", "dtype", "c_dtype",
               "c_read", "flops", "bytes", "bytes_a", "bytes_b", "bytes_c", "intensity", "bound",
               "attainable_tflops", "time_s", "predicted_time_s", "measured_time_s",
               "efficiency", "aligned", "min_compute_bound_batch", "warnings",
               "advice", "predicted_basis", "recomputed")


# so that rows of several reports share one table
_CSV_CONTEXT = ("hardware", "batch", "mode", "seq", "phase")


def report_csv(report: Report, view: View = View()) -> str:
    """One table (see ``reports_csv``) for one report."""
    return reports_csv([report], view)


def reports_csv(reports: list[Report], view: View = View()) -> str:
    """ONE table for one or several reports (``analyze --hw A --hw B``): a header, then a row
    per GEMM (kind ``gemm``) and per op (``--gemms-only``: GEMMs only) per report, every copy of
    a repeated layer included, each row starting with its hardware, batch, mode, seq (empty
    without one) and phase (and tp where a report is served over several GPUs, ``--tp``: the
    row is one GPU's shard); raw numbers
    in SI units; warnings and advice joined with '; '; last (0.9.0), ``recomputed``: True for a
    forward GEMM or op the backward pass runs again under ``recompute`` selective or full
    (``analysis.recompute.recomputed_results``), its time counted once more in the step's."""
    return "".join(csv_chunks(reports, view))


def csv_chunks(reports: list[Report], view: View = View()) -> Iterator[str]:
    """``reports_csv``'s text in pieces, made as they are read: a row's cells after its name
    and layer are a function of its shape, written once per shape (a deep model's 300,000 rows
    are never held at once)."""
    # served over several GPUs (--tp N): a tp column says each row is one GPU's shard
    from ..analysis.recompute import recomputed_results

    keys = _CSV_CONTEXT + (("tp",) if any(r.tensor_parallel for r in reports) else ()) + (
        ("pp",) if any(r.pipeline_parallel for r in reports) else ()) + (  # (its stages)
        ("dp",) if any(r.data_parallel for r in reports) else ())  # (data-parallel ranks)
    yield _csv_line(keys + _CSV_FIELDS)
    for report in reports:
        again = recomputed_results(report)
        net = report.network
        context = {"hardware": report.hardware.name, "batch": net.batch, "mode": net.mode,
                   "seq": "" if net.seq is None else net.seq, "phase": net.step_phase,
                   "tp": report.tensor_parallel.tp if report.tensor_parallel else 1,
                   "pp": report.pipeline_parallel.pp if report.pipeline_parallel else 1,
                   "dp": report.data_parallel.dp if report.data_parallel else 1}
        yield from _csv_rows(report.results, context, _gemm_csv, _gemm_of, keys, again)
        if not view.gemms_only:
            yield from _csv_rows(report.ops, context, _op_csv, _op_of, keys, again)


def _csv_rows(results: Sequence[Any], context: dict[str, Any], data: Callable[[Any], dict],
              what: Callable[[Any], Any], keys: Sequence[str] = _CSV_CONTEXT,
              again: frozenset[int] = frozenset()) -> Iterator[str]:
    """One CSV line per result (each copy of a repeat its own), its name and layer written
    into the line its shape's other cells make once; ``again``, the ids of the results the
    backward pass runs again (a run's stored result flags every copy, as the step counts
    it)."""
    head = _csv_line([context[key] for key in keys])[:-1]
    tails: dict[int, str] = {}  # by the result read: one per shape in a deep model
    for name, layer, _, r in named(results, what):
        tail = tails.get(id(r))
        if tail is None:
            row = data(r) | {"recomputed": id(r) in again}
            tail = tails[id(r)] = _csv_line([row.get(key, "") for key in _CSV_FIELDS[2:]])
        yield f"{head},{_csv_cell(name)},{_csv_cell(layer)},{tail}"


def _gemm_csv(result: Any) -> dict[str, Any]:
    data = result.to_dict() | {"kind": "gemm"}
    data.update({f"bytes_{op}": v for op, v in data["bytes_by_operand"].items()})
    data["warnings"] = "; ".join(data["warnings"])
    data["advice"] = "; ".join(data["advice"])
    return data


def _op_csv(result: Any) -> dict[str, Any]:
    return dict(result.to_dict())


def _csv_line(cells: Sequence[Any]) -> str:
    """One CSV line as ``csv.writer`` writes it (the excel dialect, a newline at the end)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    return buffer.getvalue()


_CSV_SPECIAL = frozenset(',"\r\n')


def _csv_cell(text: str) -> str:
    """One text cell as ``csv.writer`` writes it: as it is, or quoted when it holds a comma, a
    quote or a line break."""
    if text and not _CSV_SPECIAL.intersection(text):
        return text
    return _csv_line([text])[:-1]


def report_markdown(report: Report, view: View = View()) -> str:
    """GitHub-flavoured Markdown tables with the header and totals as text around them."""
    return "".join(f"{line}\n" for line in report_markdown_lines(report, view))


def report_markdown_lines(report: Report, view: View = View()) -> Iterator[str]:
    """``report_markdown``'s lines, made as they are read; what follows the tables is made
    before the first line (``report_table_lines``)."""
    gemms, ops = shown_results(report, view)
    rows, tails, _ = _rows(report, gemms)
    note = repeat_note(report, view)
    memory = memory_line(report)
    generated = generation_line(report)
    again = recompute_line(report)
    sent = comm_line(report)
    piped = pipeline_line(report)
    ranks = dp_line(report)
    end = ["", totals_line(report)] + (["", again] if again else []) + (
        ["", sent] if sent else []) + (["", piped] if piped else []) + (
        ["", ranks] if ranks else []) + (
        ["", memory] if memory else []) + [
        "", step_line(report)] + (["", generated] if generated else []) + (
        ["", note] if note else [])
    end = list(map(markdown_text, end))
    scaling = _scaling_lines(report)
    end += ["", "```", *scaling[1:], "```"] if scaling else []  # a code block: shown as it is
    notes = _notes(report, gemms)
    if notes:
        end += ["", *(f"- {markdown_text(note.strip())}" for note in notes)]
    # one line a header line (a hard break after each), its terminal wrapping undone
    yield from [markdown_text(_header(report)).replace("\n  ", " ").replace("\n", "  \n"), ""]
    yield from markdown_lines(gemm_columns(report), ((name, layer, *tails[key])
                                         for name, layer, key in rows), _LEFT_COLUMNS)
    if ops:
        yield ""
        yield from markdown_lines(_OP_COLUMNS, (_op_row(r) for r in ops), _OP_LEFT_COLUMNS)
    yield from _time_section(report, gemms, as_markdown=True)
    yield from end


def report_html(report: Report, view: View = View(), command: str | None = None) -> str:
    """The standalone HTML page (``output.html.report_page``): chart, sortable table, advice
    and provenance in one file that needs no network."""
    from .html import report_page

    return report_page([report], view, command)


REPORT_FORMATS = {"table": report_table, "json": report_json, "csv": report_csv,
                  "markdown": report_markdown, "html": report_html}
