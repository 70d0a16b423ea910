"""The sentences of shape advice: alignment notes, tile/wave quantization and what a larger
batch does, made from the data ``analysis.alignment``, ``analysis.quantization`` and
``analysis.batch`` return. A GEMM's JSON ``warnings`` and ``advice`` lists are these."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..units import three_digits

if TYPE_CHECKING:
    from ..analysis.alignment import AlignmentNote
    from ..analysis.batch import BatchAdvice
    from ..analysis.quantization import Quantization
    from ..analysis.report import GemmResult, Report
    from ..hardware.spec import HardwareSpec
    from ..model.network import Network


def alignment_text(note: AlignmentNote, max_batch: int | None = None) -> str:
    """One dimension off an alignment tier, and what to pad it to; a batch padded past
    ``max_batch``, the largest that fits in memory, says so (``past_memory``)."""
    label = f"{note.dim}={note.value} ({note.role})"
    if note.unit > 1:
        channels = note.role.split(" x ")[0]
        label = f"{note.dim}={note.value * note.unit} ({note.role}): {channels} {note.value}"
    if note.tier == "advice":
        return (f"{label}: multiples of {note.multiple} run best on this device "
                f"(next: {note.pad_to}{past_memory(note.pad_to, max_batch, note.role)})")
    need = "required for" if note.tier == "error" else "best for"
    return (f"{label} is not a multiple of {note.multiple} ({need} {note.dtype} "
            f"Tensor Cores): pad to {note.pad_to}{tier_hint(note)}"
            f"{past_memory(note.pad_to, max_batch, note.role)}")


def past_memory(pad_to: int, max_batch: int | None, role: str = "batch") -> str:
    """``, but batch 128 does not fit in memory (at most batch 31)`` after a batch padded past
    ``max_batch``, the largest that fits (none known, or not even batch 1: nothing), else
    nothing: the per-GEMM line and the grouped note say it alike."""
    if role != "batch" or not max_batch or pad_to <= max_batch:
        return ""
    return f", but batch {pad_to} does not fit in memory (at most batch {max_batch})"


def tier_hint(note: AlignmentNote) -> str:
    """``; 50304 also meets the 128-byte tier (a multiple of 64)`` after a note off the
    16-byte rule whose tier costs little more (``AlignmentNote.tier_pad``), else nothing: the
    per-GEMM line and the grouped note say it alike."""
    if note.tier_pad <= note.pad_to:
        return ""
    return f"; {note.tier_pad} also meets the 128-byte tier (a multiple of {note.preferred})"


def quantization_text(q: Quantization) -> str:
    """The best tile, how busy it keeps the SMs, split-K and the nearest better shape."""
    tm, tn = q.tile
    wave = "wave" if q.waves == 1 else "waves"
    spread = "dealt evenly by stream-K" if q.stream_k else f"{q.waves} {wave}"
    text = (f"tile/wave quantization: best tile {tm}x{tn} ({q.tiles} tiles, {q.sms} "
            f"SMs, {spread}) keeps {q.efficiency:.0%} of slots busy")
    if q.split_k:
        text += (f"; split-K x{q.split_k.factor} would be chosen: "
                 f"{q.split_k.efficiency:.0%} busy, +{three_digits(q.split_k.extra_bytes / 1e6)}"
                 f" MB of fp32 partial sums")
    if q.better:
        m, n, k, eff = q.better
        text += f"; nearest shape losing less: {m} x {n} x {k} ({eff:.0%})"
    return text


_TIER = {"preferred": "the 128-byte tier", "multiple": "the 16-byte rule"}


def batch_text(advice: BatchAdvice) -> str:
    """What a larger batch does for a memory-bound GEMM."""
    if advice.captured is not None:
        return (f"captured at batch {advice.captured}: which of its dimensions grow with the "
                f"batch is not recorded; capture it at another batch (a factory with a batch "
                f"parameter) to see how it scales")
    if advice.batch is None:
        if advice.limit is None:
            return "its shape does not depend on the batch; a larger batch does not help"
        return (f"no batch reaches the ridge ({advice.ridge:.1f}): intensity tends to "
                f"{advice.limit:.1f} FLOP/B; widen the layer")
    text = f"batch >= {advice.batch} makes it compute-bound"
    if advice.max_batch is not None:
        scope = "the whole generation" if advice.generation else "at this sequence length"
        return text + (f", but does not fit in memory (at most batch {advice.max_batch} "
                       f"fits {scope})" if advice.max_batch else
                       ", but does not fit in memory (not even batch 1 fits" + (
                           " the whole generation)" if advice.generation else ")"))
    if advice.pad_to is None:
        return text
    return (text + f"; {advice.pad_to} also meets {_TIER[advice.tier]} (a multiple of "
                   f"{advice.multiple})")


def gemm_warnings(result: GemmResult) -> tuple[str, ...]:
    """The JSON ``warnings`` of a GEMM: 16-byte misses and FP8 errors, then a tile/wave
    quantization that leaves over a quarter of the GPU idle on a compute-bound GEMM."""
    texts = [alignment_text(n, result.max_batch) for n in result.alignment
             if n.tier != "advice"]
    q = result.quantization
    if result.bound == "compute" and q is not None and q.warns:
        texts.append(quantization_text(q))
    return tuple(texts)


def gemm_advice(result: GemmResult) -> tuple[str, ...]:
    """The JSON ``advice`` of a GEMM: the 128-byte tier, then what a larger batch does."""
    texts = [alignment_text(n, result.max_batch) for n in result.alignment
             if n.tier == "advice"]
    if result.batch_advice is not None:
        texts.append(batch_text(result.batch_advice))
    return tuple(texts)


def report_warnings(report: Report) -> tuple[str, ...]:
    """The warnings about a whole report rather than one GEMM (JSON's top-level ``warnings``):
    a config.json key whose effect is not modelled (``model.hf.UNMODELLED``), a prediction
    calibrated through another library than the one the model runs in
    (``output.times.calibration_warning``), 16-bit convolutions on NCHW tensors on a GPU
    (``output.times.layout_warning``), depthwise 3-D convolutions in channels_last_3d
    (``output.layout3d.channels_last_depthwise_warning``), convolutions held to the CUDA
    cores' rate for their input channels (``output.channels.narrow_channels_warning``), a 3-D
    convolution's weight gradient to few output channels
    (``output.channels.few_outputs_warning``), fp32 convolutions PyTorch would run in TF32
    (``output.times.tf32_warning``), GEMMs ``--measure`` timed on a shared machine
    (``output.times.shared_machine_warning``), a measured entry saved past the probe's own
    checks (``output.times.forced_warning``)."""
    from .channels import few_outputs_warning, narrow_channels_warning
    from .layout3d import channels_last_depthwise_warning
    from .times import (
        calibration_warning,
        forced_warning,
        layout_warning,
        shared_machine_warning,
        tf32_warning,
    )

    more = [w for w in (forced_warning(report.hardware), calibration_warning(report),
                        layout_warning(report), channels_last_depthwise_warning(report),
                        narrow_channels_warning(report), few_outputs_warning(report),
                        tf32_warning(report.network, report.hardware),
                        shared_machine_warning(report)) if w]
    return (*config_warnings(report.network), *more)


def whatif_warnings(network: Network, hardware: Iterable[HardwareSpec],
                    context: bool = True) -> tuple[str, ...]:
    """compare's, sweep's and plan's warnings, in their text, JSON and HTML alike: the model's
    (``config_warnings``), each device entry's saved past the probe's own checks
    (``output.times.forced_warning``), once per entry, as analyze warns of its one, and each
    GPU's fp32 convolutions that PyTorch would run in TF32 (``output.times.tf32_warning``),
    named by device where there are several."""
    from .times import forced_warning, tf32_warning

    devices = list(hardware)
    forced = dict.fromkeys(forced_warning(hw) for hw in devices)  # in order, each once
    tf32 = [(hw.name, text) for hw in devices if (text := tf32_warning(network, hw))]
    return (*config_warnings(network, context), *(text for text in forced if text),
            *(f"{name}: {text}" if len(devices) > 1 else text for name, text in tf32))


def config_warnings(network: Network, context: bool = True) -> tuple[str, ...]:
    """A sentence per config.json key whose effect is not modelled (``model.hf.UNMODELLED``),
    and (``context``) one for a seq past the model's context: analyze's, compare's, sweep's
    and plan's warnings (sweep names every swept seq past it in its own note)."""
    texts = [_config_text(network, key, value) for key, value in network.unmodelled]
    if context:
        texts += context_warnings(network)
    return tuple(texts)


def _config_text(network: Network, key: str, value: str) -> str:
    """A config key's warning: what the model counts instead. A quantization_config with
    ``--weights`` given is not read, the weights counted as the option stores them (its own
    line, the precision line, says how): said so, where "counted unquantized" would contradict
    the memory line."""
    from ..model.hf import UNMODELLED

    if key == "quantization_config" and network.weights is not None:
        return (f"{key} = {value} in the config is not read: the weights are counted as "
                f"--weights {network.weights} stores them")
    return f"{key} = {value} in the config is not modelled: {UNMODELLED[key].format(value=value)}"


def context_warnings(network: Network) -> list[str]:
    """The seq past the model's context, if it is: the step is analyzed as asked."""
    limit, seq = network.context, network.seq
    if limit is None or seq is None or seq <= limit:
        return []
    return [past_context_text([seq], limit)]


def past_context_text(seqs: list[int], limit: int) -> str:
    """Seqs past the model's context, in words (analyze's warning, sweep's note)."""
    return (f"seq {', '.join(map(str, seqs))} is past the model's context ({limit} tokens): "
            f"the step is analyzed as asked")
