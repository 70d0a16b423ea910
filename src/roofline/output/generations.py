"""Generations (``--prompt P --generate G``) in sweep's and compare's outputs: their columns,
the line that says what the columns are and which step the step columns describe, and their
CSV fields (display only). One generation's sentences are ``output.report``'s
(``generation_line`` and its parts ``prefill_text`` and ``decode_text``, ``peak_text``,
``whole_generation_text``): called here, not copied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..units import count, seconds, si
from .report import decode_text, prefill_text

if TYPE_CHECKING:
    from ..analysis.generation import Generation
    from ..analysis.report import Report

#: A generation's columns: roofline, then (where the entry predicts beyond its roofline)
#: predicted.
COLUMNS = ("TTFT", "TPOT", "latency", "tokens/s")
PREDICTED_COLUMNS = ("pred. TTFT", "pred. TPOT", "pred. tokens/s")
#: The CSV's generation fields (``Generation.to_dict``'s keys), after the sweep's own.
CSV_FIELDS = ("ttft_s", "tpot_s", "latency_s", "tokens_per_s", "predicted_ttft_s",
              "predicted_tpot_s", "predicted_latency_s", "predicted_tokens_per_s")


def columns(predicted: bool) -> list[str]:
    """The generation's column names (``cells``)."""
    return [*COLUMNS, *(PREDICTED_COLUMNS if predicted else ())]


def cells(g: Generation, predicted: bool) -> list[str]:
    """A generation's cells: TTFT, TPOT (``-`` where one token is generated: no decode step),
    latency, tokens/s (on the device, or its tensor-parallel group); then the same predicted
    but latency, with ``predicted``."""
    out = [seconds(g.ttft_s), _tpot(g.tpot_s), seconds(g.latency_s), rate(g.tokens_per_s)]
    if predicted:
        out += [seconds(g.predicted_ttft_s), _tpot(g.predicted_tpot_s),
                rate(g.predicted_tokens_per_s)]
    return out


def rate(tokens_per_s: float) -> str:
    """A tokens/s cell: the figure and its prefix, no trailing space (a Markdown cell kept
    ``si``'s ``"876 "``)."""
    return si(tokens_per_s, "").rstrip()


def values(g: Generation, predicted: bool) -> list[float | None]:
    """The raw numbers of ``cells``, in their order (what an HTML table sorts by)."""
    out = [g.ttft_s, g.tpot_s, g.latency_s, g.tokens_per_s]
    if predicted:
        out += [g.predicted_ttft_s, g.predicted_tpot_s, g.predicted_tokens_per_s]
    return out


def wait_text(g: Generation) -> str:
    """What ``Generation.wait_s`` is for ``g``: ``time per output token``, or ``time to first
    token`` where one token is generated."""
    return "time per output token" if g.decode_steps else "time to first token"


def _tpot(value: float | None) -> str:
    return "-" if value is None else seconds(value)


def terms_line(g: Generation, where: str = "on the device") -> str:
    """What a generation's columns are: ``generation: prompt 1024 + 256 tokens a sequence;
    TTFT = time to first token (prefill, last-token logits); TPOT = ...``; tokens/s made
    ``where`` (``serving_tp.where_text``: ``on the 8 GPUs`` of a group), over a pipeline by
    its ``in_flight`` batches."""
    text = (f"generation: prompt {g.prompt} + {g.generate} tokens a sequence; TTFT = time to "
            f"first token ({prefill_text(g)})")
    if g.decode_steps:
        text += (f"; TPOT = time per output token ({decode_text(g)}); latency = TTFT + "
                 f"{g.decode_steps} x TPOT")
    else:
        text += "; latency = TTFT (one token: no decode step)"
    made = (f"{g.ranks} ranks x batch x {g.generate} / latency, each rank's batch" if g.ranks > 1
            else f"batch x {g.generate} / latency" if g.in_flight == 1 else
            f"{g.in_flight} x batch x {g.generate} / the steady time of each of the "
            f"{g.in_flight} batches in flight (each phase max(its latency, {g.in_flight} x its "
            f"slowest stage))")
    return text + (f"; tokens/s = {made}, {where}; roofline times are lower bounds, tokens/s "
                   f"upper bounds")


def step_shown(report: Report, brackets: bool = True) -> str:
    """Which step of a generation its Report's own figures (step time, GEMMs, transitions, the
    step's verdict) are: ``the last decode step (KV cache 1279 tokens)``, or the prefill where
    one token is generated; without ``brackets``, ``the last decode step, KV cache 1279
    tokens``."""
    g = report.generation
    assert g is not None, "a generation's report"
    if g.decode_steps:
        step, what = "the last decode step", f"KV cache {g.prompt + g.generate - 1} tokens"
    else:
        step, what = "the prefill", f"{count(g.prompt, 'token')} a sequence, one token generated"
    return f"{step} ({what})" if brackets else f"{step}, {what}"


def csv_fields(generating: bool) -> tuple[str, ...]:
    """The CSV's generation fields: ``CSV_FIELDS`` of generations, none of steps (whose last
    columns stay where they were)."""
    return CSV_FIELDS if generating else ()


def csv_values(report: Report) -> list[Any]:
    """A row's generation fields (``csv_fields``; none without a generation)."""
    g = report.generation
    if g is None:
        return []
    data = g.to_dict()
    return ["" if data[key] is None else data[key] for key in CSV_FIELDS]
