"""Does ``roofline plan``'s step time hold against published large-scale training runs? Run on
demand (not a test; a benchmark, nothing fitted):

    .venv/bin/python benchmarks/bench_plan_published.py [--markdown] [--no-best]

Reads benchmarks/data/published_training.csv (see benchmarks/data/README.md): one row per
published training configuration, its model shape, GPU, GPU count, tensor-, pipeline- and
data-parallel degrees, micro-batch, global batch, recomputation and sequence parallelism, and
the throughput the paper reports (TFLOP/s per GPU and/or MFU), each with its citation.

Each row is planned at its published layout and nothing else (``roofline.plan`` with the row's
one tp, pp, virtual stages (1 where not published), micro-batch and ZeRO stage, its global
batch, sequence length, recompute setting, dtype and inter-node link), and the predicted step
time is turned into TFLOP/s per GPU with the FLOP count the paper itself used (``FLOP_COUNTS``),
so published / predicted is a ratio of times: below 1 where the GPUs were slower than plan
predicts (plan optimistic). Printed per row: published and predicted TFLOP/s per GPU, the ratio,
the predicted step and its parts (compute, communication exposed, pipeline bubble, optimizer),
whether the layout fits plan's memory count, and flags for what plan does not model at that row:

- ``R``: the row recomputes activations (``full`` or ``selective``); plan counts their memory
  and times the forward work run again in the backward pass (with ``full``, the forward's
  tensor-parallel transfers too: ``analysis.recompute``, ``parallel_comm``), so these rows
  depend on that model.
- ``V``: the row ran an interleaved pipeline schedule whose depth (virtual stages a GPU) the
  source does not publish (Llama 3); plan runs it as 1F1B, whose bubble is larger. Rows that
  publish it are planned at it (``--vp``: the interleaved schedule's bubble, transfers and
  memory).
- ``A``: a setting the source does not publish was assumed (the ``assumed`` column).

Beside each row, plan's own first layout at that GPU count (its default tp, pp, micro-batch and
ZeRO choices; the row's batch, sequence, recompute setting, dtype and link) and its TFLOP/s by
the same count (``--no-best`` leaves it out: its search is most of the run's 20 s). Then one
transformer layer's forward and backward times (Korthikanti et al.'s Table 4,
benchmarks/data/published_layer_times.csv) against plan's: the row planned with one layer
less, subtracted.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from _tables import table_lines

DATA = Path(__file__).parent / "data" / "published_training.csv"


@dataclass(frozen=True)
class Row:
    key: str
    source: str
    where: str
    url: str
    family: str  # gpt (Megatron-LM's GPT) | llama
    parameters_b: float | None  # as the source gives it, billions (None: not given)
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq: int
    device: str
    inter: str
    gpus: int
    tp: int
    pp: int
    dp: int
    virtual_stages: int | None  # None: not published
    micro_batch: int
    global_batch: int
    recompute: str
    sequence_parallel: bool
    zero: int
    dtype: str
    flop_count: str  # a key of FLOP_COUNTS
    tflops_per_gpu: float | None
    mfu: float | None
    hfu: float | None
    iteration_s: float | None
    assumed: tuple[str, ...]

    def published_tflops(self, flops: float, peak_tflops: float) -> float:
        """TFLOP/s per GPU as published; where the source gives an iteration time instead,
        ``flops`` (its own count) over it; else its MFU times the dense peak."""
        if self.tflops_per_gpu is not None:
            return self.tflops_per_gpu
        if self.iteration_s is not None:
            return flops / (self.iteration_s * self.gpus) / 1e12
        assert self.mfu is not None  # every row gives one of the three (tests check)
        return self.mfu * peak_tflops

    @property
    def vp(self) -> int:
        """The virtual stages plan runs: the published ones, 1 (1F1B) where not published."""
        return self.virtual_stages or 1

    @property
    def flags(self) -> str:
        return ((("R" if self.recompute != "none" else "")
                 + ("V" if self.virtual_stages is None else "")
                 + ("A" if self.assumed else "")) or "-")


_INTS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "gpus", "tp", "pp", "dp",
         "micro_batch", "global_batch", "zero")
#: columns left empty where the source does not give them
_OPTIONAL = {"parameters_b": float, "virtual_stages": int, "tflops_per_gpu": float, "mfu": float,
             "hfu": float, "iteration_s": float}


def _row(fields: dict[str, str]) -> Row:
    values: dict[str, Any] = dict(fields)
    values.update({k: int(fields[k]) for k in _INTS})
    values.update({k: kind(fields[k]) if fields[k].strip() else None
                   for k, kind in _OPTIONAL.items()})
    values["sequence_parallel"] = fields["sequence_parallel"] == "true"
    values["assumed"] = tuple(x for x in fields["assumed"].split(";") if x)
    return Row(**values)


def load_rows(path: Path = DATA) -> list[Row]:
    """The published rows, as copied (benchmarks/data/README.md)."""
    with open(path, newline="") as f:
        return [_row(fields) for fields in csv.DictReader(f)]


def model_yaml(row: Row) -> str:
    """The row's network as model.yaml. ``gpt``: Megatron-LM's GPT as these papers ran it
    (learned positions, layernorm, a GELU FFN, biases, dropout 0.1 (its defaults), the
    attention unfused, ``naive``, the output layer tied to the embedding); ``llama``: as
    ``model.hf``'s llama adapter builds one (rmsnorm, SwiGLU, RoPE, no biases, untied), with
    flash attention."""
    h, v = row.hidden, row.vocab
    if row.family == "gpt":
        return (f"name: {row.key}\nlayers:\n"
                f"  - {{type: embedding, vocab: {v}, dim: {h}, positions: {row.seq}}}\n"
                f"  - {{type: transformer, name: blk, hidden: {h}, heads: {row.heads}, "
                f"ffn: {row.ffn}, causal: true, attention: naive, bias: all, dropout: 0.1, "
                f"repeat: {row.layers}}}\n"
                f"  - {{type: norm, dim: {h}}}\n"
                f"  - {{type: linear, in: {h}, out: {v}, tied: true}}\n")
    return (f"name: {row.key}\nlayers:\n"
            f"  - {{type: embedding, vocab: {v}, dim: {h}}}\n"
            f"  - {{type: transformer, name: blk, hidden: {h}, heads: {row.heads}, "
            f"kv_heads: {row.kv_heads}, ffn: {row.ffn}, gated: true, causal: true, "
            f"norm: rmsnorm, rotary: true, repeat: {row.layers}}}\n"
            f"  - {{type: norm, dim: {h}, norm: rmsnorm}}\n"
            f"  - {{type: linear, in: {h}, out: {v}}}\n")


def megatron_recompute_flops(row: Row, parameters: int = 0) -> float:
    """Narayanan et al. (SC21), eq. (3): 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) FLOPs a
    step, the GEMMs of the blocks and the logits, forward, backward (twice the forward) and
    the forward recomputed by full recomputation (4 x the blocks' 24 B s h^2 + 4 B s^2 h, the
    logits' 6 B s h V not recomputed); the attention's s^2 terms counted whole (not halved by
    the causal mask). What their Table 1's TFLOP/s count."""
    b, s, layers, h, v = row.global_batch, row.seq, row.layers, row.hidden, row.vocab
    return 96 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))


def megatron_model_flops(row: Row, parameters: int = 0) -> float:
    """Korthikanti et al. (2022), eq. (7), "model FLOPs": 72 B l s h^2 (1 + s / (6 h) +
    V / (12 h l)), one forward and one backward pass, no recomputation (their eq. (8), the
    hardware FLOPs with selective recomputation, has s / (3 h)). What their MFU counts, and
    Megatron-LM's ``num_floating_point_operations`` for a GPT."""
    b, s, layers, h, v = row.global_batch, row.seq, row.layers, row.hidden, row.vocab
    return 72 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (12 * h * layers))


def palm_flops(row: Row, parameters: int) -> float:
    """Chowdhery et al. (PaLM, 2022), appendix B, which Llama 3 cites for its MFU: 6 N + 12 L H
    Q T FLOPs a token (N parameters, L layers, H heads of Q, T the sequence), B T tokens a
    step. The Llama 3 paper does not write its count out: this one is assumed (``assumed``)."""
    tokens = row.global_batch * row.seq
    return tokens * (6 * parameters + 12 * row.layers * row.hidden * row.seq)


#: the FLOP count each source divides by its time (``flop_count``), as a function of the row and
#: the network's parameter count
FLOP_COUNTS = {"megatron-recompute": megatron_recompute_flops,
               "megatron-model": megatron_model_flops, "palm": palm_flops}


def flops_per_step(row: Row, parameters: int) -> float:
    return FLOP_COUNTS[row.flop_count](row, parameters)


def network(row: Row) -> Any:
    from roofline import network_from_yaml

    return network_from_yaml(model_yaml(row), row.key)


def planned(row: Row, net: Any = None) -> Any:
    """``roofline.plan`` at the row's published layout (its tp, pp, virtual stages, micro-batch,
    ZeRO stage and sequence parallelism, dp their quotient): the one layout's result, fitting
    or not."""
    from roofline import plan

    result = plan(net or network(row), row.device, row.gpus, tp=row.tp, pp=row.pp, vp=row.vp,
                  micro_batch=row.micro_batch, zero=row.zero,
                  sequence_parallel=row.sequence_parallel, inter=row.inter,
                  batch=row.global_batch, seq=row.seq, recompute=row.recompute,
                  dtype=row.dtype)
    (only,) = result.results
    assert only.layout.dp == row.dp, (row.key, only.layout)
    return only


def plans_own(row: Row, net: Any = None) -> Any:
    """plan's own first layout at the row's GPU count (its default tp, pp, micro-batch and
    ZeRO choices; the row's batch, sequence, recompute setting, dtype and link), or None where
    none fits."""
    from roofline import plan

    return plan(net or network(row), row.device, row.gpus, inter=row.inter,
                batch=row.global_batch, seq=row.seq, recompute=row.recompute,
                dtype=row.dtype).best


@dataclass(frozen=True)
class Outcome:
    row: Row
    published_tflops: float
    predicted_tflops: float
    peak_tflops: float
    step_s: float
    parts: dict[str, float]
    fits: bool | None
    best: str = ""  # plan's own layout at the GPU count and its TFLOP/s (none with --no-best)

    @property
    def ratio(self) -> float:
        """Published / predicted TFLOP/s: the predicted step time over the published one."""
        return self.published_tflops / self.predicted_tflops


def outcome(row: Row, best: bool = False) -> Outcome:
    """The row planned at its layout, its published and predicted TFLOP/s per GPU by the
    source's FLOP count (``flops_per_step``), the predicted step and its parts."""
    from roofline import load_hardware

    net = network(row)
    peak = load_hardware(row.device).peak_flops_per_s(row.dtype) / 1e12
    result = planned(row, net)
    flops = flops_per_step(row, net.parameters)
    chosen = ""
    if best:
        top = plans_own(row, net)
        chosen = "none fits" if top is None else (
            f"{_layout(top.layout)}: {flops / (top.predicted_step_s * row.gpus) / 1e12:.0f}")
    return Outcome(row, row.published_tflops(flops, peak),
                   flops / (result.predicted_step_s * row.gpus) / 1e12, peak,
                   result.predicted_step_s, result.predicted.parts, result.fits, chosen)


def _layout(lay: Any) -> str:
    return lay.label.removesuffix(" sp")  # tp8 pp16 vp2 dp64 z1 mb1 (vp where above 1)


def exposed_comm_s(parts: dict[str, float]) -> float:
    """The step's communication on the critical path: tensor-, expert-, pipeline-parallel,
    the data-parallel collectives' exposed part and the duplicated gradients' all-reduce
    (``LayoutResult.parts``, ``parallel_result.exposed_comm_s``)."""
    from roofline.analysis.parallel_result import exposed_comm_s as exposed

    return exposed(parts)


def table(outcomes: list[Outcome], markdown: bool = False) -> list[str]:
    from roofline.units import seconds

    header = ["row", "GPUs", "tp/pp/dp, mb, v", "recompute", "published TFLOP/s (of peak)",
              "predicted (of peak)", "published / predicted", "step", "compute",
              "comm exposed", "bubble", "optimizer", "fits", "flags"]
    if any(o.best for o in outcomes):
        header.append("plan's own layout: TFLOP/s")
    body = []
    for o in outcomes:
        r, p = o.row, o.parts
        v = "?" if r.virtual_stages is None else str(r.virtual_stages)
        line = [r.key, f"{r.gpus:,} {r.device.split('-')[0].upper()}",
                f"{r.tp}/{r.pp}/{r.dp}, {r.micro_batch}, {v}",
                r.recompute + (" +sp" if r.sequence_parallel else ""),
                f"{o.published_tflops:.0f} ({o.published_tflops / o.peak_tflops:.0%})",
                f"{o.predicted_tflops:.0f} ({o.predicted_tflops / o.peak_tflops:.0%})",
                f"{o.ratio:.2f}",
                seconds(o.step_s), seconds(p["compute_s"]),
                seconds(exposed_comm_s(p)), seconds(p["bubble_s"]), seconds(p["optimizer_s"]),
                {True: "yes", False: "no", None: "-"}[o.fits], r.flags]
        body.append(line + ([o.best] if o.best else []))
    return table_lines(header, body, markdown)


def summary(outcomes: list[Outcome]) -> list[str]:
    """The ratios' median and range: over every row, by source, with and without
    recomputation."""
    groups = {"all rows": outcomes}
    for o in outcomes:
        groups.setdefault(o.row.source.split(",")[0], []).append(o)
    groups["rows without recomputation"] = [o for o in outcomes if o.row.recompute == "none"]
    groups["rows with recomputation (R)"] = [o for o in outcomes if o.row.recompute != "none"]
    lines = []
    for name, group in groups.items():
        if group:
            ratios = [o.ratio for o in group]
            lines.append(f"{name}, {len(group)} rows: published / predicted median "
                         f"{statistics.median(ratios):.2f}, range {min(ratios):.2f}-"
                         f"{max(ratios):.2f}")
    return lines


LAYERS = Path(__file__).parent / "data" / "published_layer_times.csv"


@dataclass(frozen=True)
class LayerRow:
    """One transformer layer's forward and backward time, published (Korthikanti et al.'s
    Table 4: one layer of the 22B model, tp 8, micro-batch 4, with the layer's tensor-parallel
    communication)."""

    key: str
    source: str
    where: str
    url: str
    shape: str  # the published_training.csv row whose model and layout the layer is of
    recompute: str
    sequence_parallel: bool
    forward_ms: float
    backward_ms: float


def load_layer_rows(path: Path = LAYERS) -> list[LayerRow]:
    with open(path, newline="") as f:
        return [LayerRow(r["key"], r["source"], r["where"], r["url"], r["shape"],
                         r["recompute"], r["sequence_parallel"] == "true",
                         float(r["forward_ms"]), float(r["backward_ms"]))
                for r in csv.DictReader(f)]


def layer_ms(row: Row) -> tuple[float, float]:
    """plan's forward and backward time of one of the row's transformer layers, each with its
    share of the layer's tensor-parallel communication (two all-reduces in the forward, two in
    the backward, and with full recomputation the forward's two again in the backward:
    ``parallel_comm.RECOMPUTED_TRANSFERS``), in ms: the row planned with one layer less, one
    micro-batch's times of its (only) stage subtracted. The row must run without a pipeline
    (pp 1), so that its one stage holds every layer."""
    from roofline.analysis.parallel_comm import RECOMPUTED_TRANSFERS

    assert row.pp == 1, row.key
    whole, less = (planned(replace(row, layers=n)).predicted.stages[0]
                   for n in (row.layers, row.layers - 1))
    transfers = 4 + (RECOMPUTED_TRANSFERS if row.recompute == "full" else 0)
    comm = whole.tp_comm_s - less.tp_comm_s
    return ((whole.forward_s - less.forward_s + comm * 2 / transfers) * 1e3,
            (whole.backward_s - less.backward_s + comm * (transfers - 2) / transfers) * 1e3)


def layer_table(markdown: bool = False) -> list[str]:
    shapes = {r.key: r for r in load_rows()}
    header = ["one 22B layer (Korthikanti et al., Table 4)", "published forward / backward",
              "predicted", "predicted / published", "flags"]
    body = []
    for lr in load_layer_rows():
        row = replace(shapes[lr.shape], recompute=lr.recompute,
                      sequence_parallel=lr.sequence_parallel)
        fwd, bwd = layer_ms(row)
        body.append([lr.key, f"{lr.forward_ms:g} / {lr.backward_ms:g} ms",
                     f"{fwd:.1f} / {bwd:.1f} ms",
                     f"{fwd / lr.forward_ms:.2f} / {bwd / lr.backward_ms:.2f}",
                     "R" if lr.recompute != "none" else "-"])
    return table_lines(header, body, markdown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="tables in Markdown")
    parser.add_argument("--no-best", dest="best", action="store_false",
                        help="leave out plan's own layout at each GPU count (its search takes "
                             "most of the run, about 20 s)")
    args = parser.parse_args(argv)
    outcomes = [outcome(row, args.best) for row in load_rows()]
    print("roofline plan at published training layouts (benchmarks/data/published_training.csv):"
          " TFLOP/s per GPU by each source's own FLOP count; published / predicted below 1 "
          "where plan is optimistic")
    print("\n".join(table(outcomes, args.markdown)))
    print("\nflags: R recomputation (plan times the forward work run again, and with full "
          "recomputation the forward's transfers), V an interleaved pipeline of unpublished "
          "depth (v ?), planned as 1F1B (plan runs each published v interleaved), A a setting "
          "assumed (the data file's assumed column)")
    print("\n".join(summary(outcomes)))
    print()
    print("\n".join(layer_table(args.markdown)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
