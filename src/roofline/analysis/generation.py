"""Generating G tokens from a prompt of P: time to first token, time per output token, tokens
per second and the end-to-end latency, at the roofline (lower bounds).

- TTFT: one prefill step of the P prompt tokens per sequence; generation keeps only the last
  token's logits (``logits: last``: the output layer runs on one row per sequence), unless the
  network asks for all of them (scoring).
- Then G - 1 decode steps (the prefill already gave the first token): step i (1 .. G - 1) feeds
  token i and attends to P + i keys (the prompt, the tokens generated so far and its own), so
  the KV cache grows from P + 1 to P + G - 1. TPOT is the mean of those steps, summed exactly,
  not read at one point: in decode every GEMM and op has FLOPs and bytes affine in the key
  length s (attention reads s keys), so each one's time, max(work(s) / peak, bytes(s) /
  bandwidth), is summed over s in closed form (two arithmetic series either side of where the
  two terms cross). An item whose work does not depend on s keeps its report time (tile and
  wave quantization included, with ``quantization``); one that does (attention) is on the pure
  roofline.
  A block with a sliding window (``Transformer.window``) is affine in s up to its window and
  the same beyond it, so the key lengths are split there and each piece summed on its own
  (the predicted trapezoid too).
- latency = TTFT + (G - 1) x TPOT; tokens/s = batch x G / latency on the device, G / latency
  per sequence.
- The same four predicted (``predicted_*``: the reports' ``predicted_time_s``, on the basis
  the report states: calibrated, fitted or datasheet): TTFT the prefill's predicted step; the
  decode steps the mean of the first and the last step's predicted times, times their number
  (the trapezoid rule: exact where a step's prediction is affine in the key length, as a
  GPU's decode attention, a launch plus its bytes, is; near it where tile and wave steps of a
  naive attention GEMM or a CPU op leaving the cache bend it).
- Memory: the larger of the prefill step's and the last decode step's (the KV cache of
  P + G - 1 tokens), with the largest batch that fits both; ``memory_step`` says which of the
  two the parts are (the prefill's activations of P tokens a sequence can outweigh the last
  step's longer KV cache), so that a reader does not take the prefill's KV cache of P tokens
  for the last step's; the batch advice of the report shown says that batch too (a long
  prompt's prefill can fit fewer than the last decode step, as with a sliding window, whose
  cache stops growing); where the prefill fits fewer, ``decode_max_batch`` is the last
  decode step's own largest batch, what a server that prefills a few sequences, or chunks, at a
  time is held to (the prefill of batch x P tokens at once holds activations such a server does
  not).

The Report shown is the last decode step (the prefill when G = 1), with this attached.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError
from ..files.fields import positive_int
from ..hardware.spec import HardwareSpec
from ..model.layers import Transformer
from ..model.network import Network, check_model
from ..model.repeats import Numbered, repeated_values
from .memory import Memory, memory_of
from .report import GemmResult, OpResult, Report, analyze


@dataclass(frozen=True)
class Generation:
    """A prompt of ``prompt`` tokens and ``generate`` output tokens, ``batch`` sequences."""

    prompt: int
    generate: int
    batch: int
    logits: str  # "last" (generation) or "all" (scoring)
    ttft_s: float
    decode_s: float  # all G - 1 decode steps together
    prefill: Report
    predicted_ttft_s: float = 0.0
    predicted_decode_s: float = 0.0  # all G - 1 decode steps together, predicted
    #: the step whose memory the report's ``memory`` parts are, the larger: "prefill" (P tokens
    #: a sequence) or "decode" (the last decode step, a KV cache of P + G - 1 tokens)
    memory_step: str = "prefill"
    #: the largest batch the last decode step alone fits where the prefill fits fewer (its
    #: activations of batch x P tokens at once the limit, not the KV cache), else None: what a
    #: server that prefills a few sequences, or chunks, at a time is held to instead
    decode_max_batch: int | None = None
    #: the batches in flight at once (a pipeline's, ``analysis.serving_pp``: pp), each taking
    #: ``steady_s`` (predicted: ``predicted_steady_s``) for its generation while the others
    #: run; None: one batch, alone, its latency
    in_flight: int = 1
    steady_s: float | None = None
    predicted_steady_s: float | None = None
    #: the data-parallel ranks generating alike at once (``analysis.serving_dp``: dp), each its
    #: own ``batch``: tokens/s are theirs together
    ranks: int = 1

    @property
    def decode_steps(self) -> int:
        return self.generate - 1

    @property
    def tpot_s(self) -> float | None:
        """The mean decode step (None when one token is generated: there is none)."""
        return self.decode_s / self.decode_steps if self.decode_steps else None

    @property
    def latency_s(self) -> float:
        return self.ttft_s + self.decode_s

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second on the device (or the group): batch x G / latency; with
        batches in flight, in_flight x batch x G / their steady generation time; over
        data-parallel ranks, ranks x that."""
        return (self.ranks * self.in_flight * self.batch * self.generate
                / (self.steady_s or self.latency_s))

    @property
    def tokens_per_s_per_sequence(self) -> float:
        return self.generate / self.latency_s

    @property
    def predicted_tpot_s(self) -> float | None:
        return self.predicted_decode_s / self.decode_steps if self.decode_steps else None

    def wait_s(self, predicted: bool = False) -> float:
        """What a sequence waits for each output token: the time per output token, or, where
        one token is generated (no decode step), the time to first token; roofline or
        ``predicted``."""
        tpot = self.predicted_tpot_s if predicted else self.tpot_s
        if tpot is not None:
            return tpot
        return self.predicted_ttft_s if predicted else self.ttft_s

    @property
    def predicted_latency_s(self) -> float:
        return self.predicted_ttft_s + self.predicted_decode_s

    @property
    def predicted_tokens_per_s(self) -> float:
        return (self.ranks * self.in_flight * self.batch * self.generate
                / (self.predicted_steady_s or self.predicted_latency_s))

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``generation`` object."""
        return {"prompt": self.prompt, "generate": self.generate, "batch": self.batch,
                "logits": self.logits, "ttft_s": self.ttft_s, "tpot_s": self.tpot_s,
                "tokens_per_s": self.tokens_per_s,
                "tokens_per_s_per_sequence": self.tokens_per_s_per_sequence,
                "latency_s": self.latency_s, "predicted_ttft_s": self.predicted_ttft_s,
                "predicted_tpot_s": self.predicted_tpot_s,
                "predicted_latency_s": self.predicted_latency_s,
                "predicted_tokens_per_s": self.predicted_tokens_per_s,
                "decode_steps": self.decode_steps,
                "kv_cache_tokens": [self.prompt + 1, self.prompt + self.generate - 1]
                if self.decode_steps else None, "memory_step": self.memory_step,
                "decode_max_batch": self.decode_max_batch}


def check_settings(source: str, phase: str | None, mode: str | None) -> None:
    """A generation runs its prefill and decode steps itself, as an inference: a phase, or
    mode train, given with it is refused (InputError naming ``source``)."""
    if phase is not None:  # it runs both phases itself, at the lengths it is given
        raise InputError(source, "phase", "a generation (prompt and generate) runs its "
                         "prefill and decode steps itself: give no phase with it")
    if mode == "train":
        raise InputError(source, "mode", "a generation (prompt and generate) is an "
                         "inference: give no mode train with it")


def checked_source(model: Network | str | os.PathLike[str], phase: str | None,
                   mode: str | None) -> str:
    """``model``'s name as a generation's refusals give it, once ``model`` is checked to be a
    Network or a path and the settings a generation refuses are (``check_settings``): the one
    start of analyze's (``api.generation_settings``), compare's and sweep's checks."""
    check_model(model)  # before its refusals name it
    source = model.source if isinstance(model, Network) else os.fspath(model)
    check_settings(source, phase, mode)
    return source


def check_request(source: str, prompt: int | None, generate: int | None,
                  seq: Any = None) -> None:
    """A generation needs both lengths, and sets the sequence lengths from them: one length
    alone, or a seq (one or several) given with them, is refused (InputError naming
    ``source``). The one check of analyze's, sweep's and compare's ``prompt``/``generate``."""
    if prompt is None or generate is None:
        raise InputError(source, "prompt" if prompt is None else "generate",
                         "a generation needs both a prompt length and an output length")
    if seq is not None:
        raise InputError(source, "seq", "a generation sets the sequence lengths from the "
                                        "prompt and output lengths: give no seq")


def refuse_captured(source: str) -> None:
    """InputError: a generation of a captured module (``package.module:callable``, or its
    Network), refused before its capture where the caller knows it is one
    (``api.generation_settings``)."""
    raise InputError(source, "generate", "a captured module's step is its example inputs' "
                     "shapes, one length: a generation's prefill and decode steps at every "
                     "length need a model.yaml or config.json")


def check_lengths(network: Network, prompt: int, generate: int) -> tuple[int, int]:
    """``(prompt, generate)`` as ints: positive integers (``files.fields.positive_int``: numpy's
    too) whose total the model's context holds, on a model with attention (a KV cache to
    decode against) built from a model.yaml or config.json (a captured module ran at its
    inputs' one length), else InputError."""
    def fail(key: str, problem: str) -> InputError:
        return InputError(network.source, key, problem)

    prompt, generate = positive_int(prompt, fail, "prompt"), positive_int(generate, fail,
                                                                          "generate")
    if network.framework is not None:  # its attention, if any, ran at its inputs' one length
        refuse_captured(network.source)
    if not any(isinstance(run.layer, Transformer) for run in network.layer_runs):
        raise InputError(network.source, "generate", "a generation decodes against the KV "
                         "cache attention keeps, but no layer keeps one (no transformer block)")
    context = network.context
    if context is not None and prompt + generate > context:
        raise InputError(network.source, "prompt", f"prompt {prompt} + generate {generate} = "
                         f"{prompt + generate} tokens is longer than the model's context "
                         f"({context} tokens)")
    return prompt, generate


def generate(network: Network, hardware: HardwareSpec, prompt: int, generate: int,
             quantization: bool = False, memory: Memory | None = None) -> Report:
    """The last decode step's Report (the prefill's when ``generate`` is 1) with the
    ``Generation`` attached (see the module docstring); ``memory``, where the caller knows
    what one GPU holds through the generation otherwise (a pipeline's most loaded stage,
    ``analysis.serving_pp``), is what every step's residency and batch advice are judged by
    (the Report's memory stays the network's own: the caller sets it)."""
    network = network.with_overrides(mode="inference")
    prompt, generate = check_lengths(network, prompt, generate)
    logits = network.logits or "last"
    fitting = memory.max_batch if memory is not None else None
    prefill = analyze(network.with_overrides(phase="prefill", seq=prompt, logits=logits),
                      hardware, quantization, fitting, memory)
    steps = generate - 1
    # the larger of the prefill's and the last decode step's memory, known before the decode
    # steps are analyzed, so their batch advice says the batch the whole generation fits
    last = memory_of(_decode(network, prompt + steps), hardware) if steps else None
    given = memory
    memory, step = _peak_memory(prefill.memory, last)
    fits = memory.max_batch if memory is not None else None
    if given is not None:
        fits = given.max_batch
    shown, decode_s, predicted_s = prefill, 0.0, 0.0
    for low, high in _segments(network, prompt + 1, prompt + steps):
        first = analyze(_decode(network, low), hardware, quantization, fits, given)
        second = analyze(_decode(network, low + 1), hardware, quantization, fits, given)
        decode_s += _decode_sum(first, second, low, high)
        shown = (first if high == low else second if high == low + 1 else
                 analyze(_decode(network, high), hardware, quantization, fits, given))
        predicted_s += (high - low + 1) * (first.totals["predicted_time_s"]
                                           + shown.totals["predicted_time_s"]) / 2  # trapezoid
    result = Generation(prompt, generate, prefill.batch, logits, prefill.totals["time_s"],
                        decode_s, prefill, prefill.totals["predicted_time_s"], predicted_s, step,
                        _decode_limit(prefill.memory, last))
    return replace(shown, generation=result, memory=memory)


def analyses(network: Network, prompt: int, generate: int) -> int:
    """How many steps ``generate`` analyzes: the prefill, and for each piece of the decode
    steps (``_segments``) its first two key lengths and its last (what a sweep of generations
    bounds)."""
    return 1 + sum(2 + (high > low + 1) for low, high in
                   _segments(network, prompt + 1, prompt + generate - 1))


def point_step(report: Report) -> str | None:
    """Which step of a generation ``report``'s own figures (step time, GEMMs, transitions)
    are: ``"last-decode"``, or ``"prefill"`` where one token is generated; None for a plain
    step (the JSON's ``point_step``)."""
    g = report.generation
    if g is None:
        return None
    return "last-decode" if g.decode_steps else "prefill"


def _segments(network: Network, first: int, last: int) -> list[tuple[int, int]]:
    """The key lengths ``first`` .. ``last`` (none when ``last`` < ``first``) split after each
    sliding window inside them: a windowed block's decode step is affine in the key length up
    to its window and the same beyond it (``Transformer.active_window``), so each piece is
    summed on its own."""
    if last < first:
        return []
    windows = {run.layer.active_window for run in network.layer_runs
               if isinstance(run.layer, Transformer)}
    cuts = sorted(w for w in windows if w and first <= w < last)
    bounds = [first, *(w + 1 for w in cuts)]
    return list(zip(bounds, [*(w for w in cuts), last]))


def _decode(network: Network, seq: int) -> Network:
    return network.with_overrides(phase="decode", seq=seq)


def _peak_memory(prefill: Memory | None, decode: Memory | None
                 ) -> tuple[Memory | None, str]:
    """The larger of the two steps' memory (the prefill's on a tie), with the largest batch
    that fits both, and which step it is: "prefill" or "decode"."""
    if prefill is None or decode is None:
        return prefill or decode, "prefill" if decode is None else "decode"
    step = "decode" if decode.total_bytes > prefill.total_bytes else "prefill"
    peak = decode if step == "decode" else prefill
    if prefill.max_batch is None or decode.max_batch is None:
        return peak, step
    return replace(peak, max_batch=min(prefill.max_batch, decode.max_batch)), step


def _decode_limit(prefill: Memory | None, decode: Memory | None) -> int | None:
    """The largest batch the last decode step fits, where the prefill, all the batch's prompts
    at once, fits fewer (``Generation.decode_max_batch``); else None."""
    if prefill is None or decode is None or prefill.max_batch is None or \
            decode.max_batch is None or decode.max_batch <= prefill.max_batch:
        return None
    return decode.max_batch


def _decode_sum(a: Report, b: Report, first: int, last: int) -> float:
    """The decode steps' time for key lengths ``first`` .. ``last``, from the reports at
    ``first`` (``a``) and ``first + 1`` (``b``): each item's FLOPs and bytes are affine in the
    key length; its time is summed in closed form (``_sum_max``)."""
    bandwidth = a.bandwidth_bytes_per_s
    count = last - first + 1

    def gemm_time(x: GemmResult, y: GemmResult) -> float:
        peak = a.hardware.peak_flops_per_s(x.gemm.dtype)
        work = (x.gemm.work, y.gemm.work)
        return _item_sum(*work, x.gemm.bytes, y.gemm.bytes, peak, x.time_s, bandwidth, count)

    def op_time(p: OpResult, q: OpResult) -> float:
        return _item_sum(p.op.flops, q.op.flops, p.op.bytes, q.op.bytes, a.peak_flops_per_s,
                         p.time_s, bandwidth, count)

    # each item's sum in numbering order (GEMMs, then ops); a repeat's copies share theirs
    times = _paired(a.results, b.results, gemm_time) + _paired(a.ops, b.ops, op_time)
    return sum(times, 0.0)


def _paired(one: Sequence[Any], two: Sequence[Any], time: Callable[[Any, Any], float]
            ) -> list[float]:
    """``time(x, y)`` of each item of ``one`` with its twin in ``two`` (the same step at the
    next key length), in order; for runs of copies (``model.repeats``) once per run."""
    if isinstance(one, Numbered) and isinstance(two, Numbered):
        out: list[float] = []
        for run, twin in zip(one.runs, two.runs):
            out += repeated_values([time(x, y) for x, y in zip(run.items, twin.items)], run)
        return out
    return [time(x, y) for x, y in zip(one, two)]


def _item_sum(work_a: float, work_b: float, bytes_a: float, bytes_b: float, peak: float,
              time_a: float, bandwidth: float, count: int) -> float:
    """One item's time summed over ``count`` decode steps (``_sum_max``)."""
    if work_a == work_b and bytes_a == bytes_b:
        return count * time_a
    return _sum_max(work_a / peak, (work_b - work_a) / peak, bytes_a / bandwidth,
                    (bytes_b - bytes_a) / bandwidth, count)


def _series(c0: float, c1: float, low: int, high: int) -> float:
    """sum of c0 + c1 x for x = low .. high (0 when empty)."""
    if high < low:
        return 0.0
    n = high - low + 1
    return n * c0 + c1 * (low + high) * n / 2


def _sum_max(u0: float, u1: float, w0: float, w1: float, count: int) -> float:
    """sum over x = 0 .. count - 1 of max(u0 + u1 x, w0 + w1 x), in closed form."""
    du, dx = u0 - w0, u1 - w1
    if dx == 0:
        return _series(u0, u1, 0, count - 1) if du >= 0 else _series(w0, w1, 0, count - 1)
    root = -du / dx  # where the two lines cross
    if dx > 0:  # u is the larger from the crossing on
        k = min(count, max(0, math.ceil(root)))
        return _series(w0, w1, 0, k - 1) + _series(u0, u1, k, count - 1)
    k = min(count - 1, max(-1, math.floor(root)))  # u is the larger up to the crossing
    return _series(u0, u1, 0, k) + _series(w0, w1, k + 1, count - 1)
