"""What a Network's step must have before it is built, each missing or contradicting setting
refused in one line naming it: batch, dtype and a seq where a layer needs one (``check_step``,
``Network.check``), precisions that meet (``_check_precision``), decode only where a causal
KV cache is kept (``_check_phase``), no seq on an image model (``_check_seq``), and batch x seq
within ``files.numbers.MAX_INT`` where a user's batch and seq meet (``check_tokens``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError, option
from ..files.numbers import MAX_INT
from ..units import three_digits
from .dtypes import GROUPED_DTYPES, TORCH_DTYPES, bits, is_float, output_problem
from .layers import Transformer

if TYPE_CHECKING:
    from .network import Network


def check_tokens(network: Network) -> Network:
    """This network, or InputError when batch x seq passes ``files.numbers.MAX_INT``.

    Each is bounded where it is read, but their product is the rows of every per-token
    GEMM (and a decode's KV cache): batch 2**40 at seq 2**40 gave M = 1.2e24 and exit 0.
    Checked where a user's batch and seq meet (a model file, ``with_overrides``: every
    command's options, sweep's points, a generation's lengths), not in ``check()``: the
    memory and step-verdict searches try batches and seqs past it on purpose."""
    if network.batch is None or network.seq is None or network.batch * network.seq <= MAX_INT:
        return network
    raise InputError(network.source, "batch, seq", f"{network.batch} x {network.seq} = "
                     f"{three_digits(network.batch * network.seq)} tokens is out of range (at "
                     f"most 2**40 = {MAX_INT}: the rows of a step's GEMMs, or its KV cache "
                     f"in decode): lower batch or seq (in the model or {option('batch')} / "
                     f"{option('seq')})")


def check_step(network: Network) -> None:
    """Raise InputError naming the first setting the step still lacks (batch, dtype, seq):
    a config.json gives no batch, and maybe no dtype; the CLI's options fill them in. Two or
    more missing are named together, in one line (not one a run)."""
    # the first layer that needs a seq the step lacks, searched once
    needs_seq = None if network.seq is not None else next(
        (layer for _, layer in network.layer_groups() if getattr(layer, "needs_seq", False)),
        None)
    missing = [key for key, lacks in (("batch", network.batch is None),
                                      ("dtype", network.dtype is None),
                                      ("seq", needs_seq is not None)) if lacks]
    if len(missing) > 1:
        given = ", ".join(option(key) for key in missing[:-1]) + f" and {option(missing[-1])}"
        raise InputError(network.source, ", ".join(missing), f"missing required fields (give "
                         f"them in the model or {given})")
    for key, value in (("batch", network.batch), ("dtype", network.dtype)):
        if value is None:
            raise missing_field(network, key)
    _check_precision(network)
    _check_phase(network)
    _check_seq(network)
    if needs_seq is not None:
        raise InputError(network.source, "seq", f"missing required field: layer "
                         f"{needs_seq.name!r} needs tokens per sample (give seq in the "
                         f"model or {option('seq')})")


def missing_field(network: Network, key: str) -> InputError:
    """The one line for a step without ``key`` (batch or dtype): where to give it, and for a
    config.json's dtype why it has none (``_config_dtype_text``)."""
    where = (_config_dtype_text(network) if key == "dtype" and network.source.endswith(".json")
             else f"give {key} in the model or")
    return InputError(network.source, key, f"missing required field ({where} {option(key)})")


def _config_dtype_text(network: Network) -> str:
    """Why a config.json's step has no dtype: the config gives none, or gives one not read
    here (``torch_dtype 'int8'``), and the dtypes read (``dtypes.TORCH_DTYPES``)."""
    names = list(TORCH_DTYPES)
    read = f"{', '.join(names[:-1])} or {names[-1]}"
    if network.unread_dtype is None:
        return f"the config.json gives no torch_dtype read here: {read}; give"
    key, value = network.unread_dtype
    return (f"the config.json gives {key} {value}, which is not read here: only {read} "
            f"are; give")


def _check_phase(network: Network) -> None:
    """``phase: decode`` is an inference phase, one new token per sequence against the KV
    cache attention keeps: refused in a training step and on a model without attention,
    where it would change nothing (never ignored in silence)."""
    if network.phase != "decode":
        return
    if network.mode == "train":
        raise InputError(network.source, "phase", f"decode is an inference phase but the "
                         f"model trains (mode train): set mode to inference (in the model "
                         f"or {option('mode', 'inference')}) or leave phase out")
    blocks = [run.layer for run in network.layer_runs if isinstance(run.layer, Transformer)]
    if not blocks:
        raise InputError(network.source, "phase", "decode reads a KV cache of seq tokens per "
                         "sequence, but no layer keeps one (no transformer block): leave "
                         "phase out (prefill)")
    if not any(block.causal for block in blocks):
        raise InputError(network.source, "phase", "decode reads the KV cache a causal "
                         "transformer keeps, but every block here is bidirectional (causal: "
                         "false, the default; an encoder such as BERT keeps none): set "
                         "causal: true on a decoder's blocks, or leave phase out (prefill)")


def _check_seq(network: Network) -> None:
    """``seq`` is tokens per sample: a model that starts from an image (its first layer
    reads a feature map) and has no layer that reads tokens (a transformer block) has none,
    its features after the pooling one row a sample; a seq there would multiply only the
    layers after the flatten, so it is refused."""
    first = network.layer_runs[0].layer
    if (network.seq is not None and hasattr(first, "with_input") and not any(
            getattr(run.layer, "needs_seq", False) for run in network.layer_runs)):
        raise InputError(network.source, "seq", f"seq is tokens per sample, but the model "
                         f"starts from an image (its first layer {first.name!r} reads a "
                         f"feature map): leave seq out")


def _check_precision(network: Network) -> None:
    """Weights may be stored narrower than the activations they meet (weight-only formats:
    W4A16, W8A16, fp8 weights under fp16 math; int4 under int8 math, W4A8), never wider,
    and integer weights need integer or float math, fp8 weights float math; a group size
    belongs to int4 weights; a training step keeps its weights at the activations' dtype.
    C follows the math: float math writes a float C (``dtypes.output_problem``), so fp16
    into int32 is refused, not priced as a GEMM nobody runs."""
    weights, act = network.weight_dtype, network.activation_dtype
    problem = network.output_dtype and output_problem(act, network.output_dtype)
    if problem:
        raise InputError(network.source, "output_dtype", problem)
    if weights != act:
        narrower = bits(weights) < bits(act)
        kinds = is_float(act) or (weights == "int4" and act == "int8")
        if not (narrower and kinds):
            raise InputError(network.source, "weights", f"{weights} weights cannot meet {act} "
                             f"activations: a stored weight format must be narrower than the "
                             f"activations (weight-only: int4, int8 or fp8 weights with fp16 "
                             f"or bf16 activations; W4A8: int4 with int8) or the same")
        if network.mode == "train":
            raise InputError(network.source, "weights", f"{weights} weights with {act} "
                             f"activations are modelled for inference only (a training step"
                             f" keeps its weights at the activations' dtype)")
    if network.group_size is not None and weights not in GROUPED_DTYPES:
        raise InputError(network.source, "group_size", f"a group size needs group-quantized "
                         f"weights ({', '.join(GROUPED_DTYPES)}); the weights are {weights}")
