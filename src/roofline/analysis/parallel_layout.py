"""How a training step is split over GPUs (``Layout``: tp x pp x dp GPUs, ep inside dp, the
ZeRO stage, the micro-batch, sequence parallelism), the layouts a network can run
(``check_training``, ``check_layout``: one line for each it cannot), what every stage of one
layout shares (``_Context``) and the divisors a GPU count splits by. The rules and their
sources: ``analysis.parallel``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, option
from ..model.layers import Step, Transformer
from ..model.network import Network
from .collectives import Fabric

ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class Layout:
    """How a step is split: tp x pp x dp GPUs, ep experts groups inside dp, ZeRO stage, the
    micro-batch (sequences per GPU per forward pass), sequence parallelism, and vp: the model
    chunks (virtual pipeline stages) each pipeline GPU holds, 1 for the 1F1B schedule, more for
    Megatron-LM's interleaved one (``analysis.parallel``)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    zero: int = 0
    micro_batch: int = 1
    sequence_parallel: bool = False
    vp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def label(self) -> str:
        """``tp8 pp2 dp4 z1 mb2`` (vp, ep and sp only when used: ``tp8 pp16 vp4 dp64 ...``)."""
        parts = [f"tp{self.tp}", f"pp{self.pp}"] + ([f"vp{self.vp}"] if self.vp > 1 else [])
        parts += [f"dp{self.dp}"]
        parts += [f"ep{self.ep}"] if self.ep > 1 else []
        parts += [f"z{self.zero}", f"mb{self.micro_batch}"]
        return " ".join(parts) + (" sp" if self.sequence_parallel and self.tp > 1 else "")

    def to_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "pp": self.pp, "vp": self.vp, "dp": self.dp, "ep": self.ep,
                "zero": self.zero, "micro_batch": self.micro_batch,
                "sequence_parallel": self.sequence_parallel and self.tp > 1,
                "gpus": self.gpus}


@dataclass(frozen=True)
class _Context:
    """What every stage of one layout shares."""

    layout: Layout
    fabric: Fabric
    step: Step
    m: int  # micro-batches per data-parallel rank
    e: int  # activation and weight bytes
    grad_e: int
    state_e: int  # optimizer state bytes per parameter
    recompute: str
    vocabularies: set[int]  # the sharded vocabularies (the logits' widths)

    @property
    def sp(self) -> bool:
        return self.layout.sequence_parallel and self.layout.tp > 1

    @property
    def edp(self) -> int:
        """The expert weights' data-parallel group: dp / ep."""
        return self.layout.dp // self.layout.ep


def check_training(network: Network) -> None:
    """One line (InputError) for a step that is not a training step: the layouts are
    modelled for training only."""
    if network.mode != "train":
        raise InputError(network.source, "mode", "parallel layouts are modelled for training "
                                                 "steps only, not for serving (give mode "
                                                 "train)")


def _block_runs(network: Network) -> list[Any]:
    """The runs of ``network``'s transformer blocks."""
    return [run for run in network.layer_runs if isinstance(run.layer, Transformer)]


def _check_blocks(network: Network, layout: Layout) -> None:
    """Every block's split by ``layout`` (``_check_block``), a run's copies alike: its first
    named in the message (its name only: a layout search checks every layout, and building
    the copy was a tenth of Llama-2-70B's)."""
    for run in _block_runs(network):
        assert isinstance(run.layer, Transformer)
        _check_block(network.source, run.layer, layout, run.name(0))


def check_layout(network: Network, layout: Layout) -> None:
    """One line (InputError) for a layout this network cannot run: tp not dividing a block's
    heads, kv_heads or ffn, a pipeline deeper than the blocks, ep not dividing the experts or
    dp, ZeRO 2 or 3 with a pipeline, experts at tp > 1 without sequence parallelism, a
    training-only split of an inference step, interleaved
    stages (vp > 1) without a pipeline or with more chunks (pp x vp) than blocks."""
    src = network.source
    check_training(network)
    for name, value in (("tp", layout.tp), ("pp", layout.pp), ("dp", layout.dp),
                        ("ep", layout.ep), ("micro_batch", layout.micro_batch),
                        ("vp", layout.vp)):
        if value < 1:
            raise InputError(src, "", f"{option(name)} must be at least 1, got {value}")
    if layout.zero not in ZERO_STAGES:
        raise InputError(src, "", f"{option('zero')} must be 0, 1, 2 or 3, got {layout.zero}")
    runs = _block_runs(network)
    if not runs and (layout.tp > 1 or layout.pp > 1 or layout.ep > 1):
        raise InputError(src, "", f"tensor, pipeline and expert parallelism split transformer "
                                  f"blocks; the model has none (use {option('tp', '1')} "
                                  f"{option('pp', '1')})")
    _check_blocks(network, layout)
    blocks = sum(run.count for run in runs)
    if layout.pp > blocks and layout.pp > 1:
        raise InputError(src, "", f"a pipeline of {layout.pp} stages is deeper than the model's "
                                  f"{blocks} transformer blocks ({option('pp')})")
    _check_chunks(src, layout, blocks)
    if layout.dp % layout.ep:
        raise InputError(src, "", f"expert parallelism {layout.ep} must divide the "
                                  f"data-parallel degree {layout.dp} ({option('ep')})")
    experts = any(isinstance(run.layer, Transformer) and run.layer.experts for run in runs)
    if layout.ep > 1 and not experts:
        raise InputError(src, "", f"expert parallelism {layout.ep} splits experts; the model's "
                                  f"transformer blocks have none ({option('ep', '1')})")
    if layout.tp > 1 and not layout.sequence_parallel and experts:
        raise InputError(src, "", "experts with tensor parallelism need sequence parallelism: "
                                  "Megatron-Core refuses MoE training with tp > 1 without it "
                                  f"({option('sequence_parallel')})")
    if layout.zero >= 2 and layout.pp > 1:
        raise InputError(src, "", f"ZeRO stage {layout.zero} does not combine with pipeline "
                                  f"parallelism (DeepSpeed refuses it; use {option('zero', '1')}"
                                  f" or {option('pp', '1')})")


def _check_chunks(src: str, layout: Layout, blocks: int) -> None:
    """Interleaved stages (vp > 1) split a pipeline's stages into pp x vp model chunks of one
    block at least (Megatron-LM: the layers of a stage divide into its virtual stages)."""
    if layout.vp > 1 and layout.pp == 1:
        raise InputError(src, "", f"interleaved pipeline stages ({option('vp', str(layout.vp))})"
                                  f" split a pipeline's stages into chunks: give one "
                                  f"({option('pp')} 2 or more)")
    if layout.vp > 1 and layout.pp * layout.vp > blocks:
        raise InputError(src, "", f"pp x vp = {layout.pp} x {layout.vp} model chunks are more "
                                  f"than the model's {blocks} transformer blocks: each chunk "
                                  f"runs one at least ({option('vp')})")


def _check_block(src: str, block: Transformer, layout: Layout, name: str | None = None) -> None:
    """tp divides the block's heads, kv_heads and ffn; ep its experts; ``name``: the block's
    in the message, where not its own (a repeat's first copy). (top_k may exceed
    the experts a GPU holds: a token's experts then sit on several GPUs, and the shard's
    ceil(T k / (E / ep)) rows per local expert are still what uniform routing sends it.)"""
    name = block.name if name is None else name
    for what, value in (("heads", block.heads), ("kv_heads", block.kv_heads),
                        ("ffn", block.ffn),
                        *((("shared_ffn", block.shared_ffn),) if block.shared_ffn else ())):
        if value % layout.tp:
            raise InputError(src, "", f"tensor parallelism {layout.tp} does not divide "
                                      f"{what} ({value}) of block {name!r}: each GPU "
                                      f"must get whole {what} ({option('tp')})")
    if layout.ep > 1 and block.experts % layout.ep:  # a dense block (0) is data-parallel
        raise InputError(src, "", f"expert parallelism {layout.ep} needs a number of "
                                  f"experts it divides; block {name!r} has "
                                  f"{block.experts} ({option('ep')})")


def divisors(n: int) -> list[int]:
    """Every divisor of n, ascending."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))
