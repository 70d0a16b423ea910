"""What one GPU holds (the rules in ``analysis.parallel``): its tensor- and expert-parallel
group's shard of the network (``shard_network``: heads, kv_heads and ffn / tp, experts / ep, the
vocabulary padded to 128 tp, or to 64 when serving, and divided, ``padded_vocab``; when serving
one KV head a GPU where tp passes kv_heads, ``served_kv_heads``), the layers tensor parallelism
leaves whole (``replicated_layers``), and the pipeline's stages, a range of layers each read
from the runs (``stage_spans``; ``split_stages`` as index tuples); the layers as a rule walks
them, a repeat's copies unnamed (``unnamed_layers``, ``blocks_of``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..model.layers import Embedding, Linear, Transformer
from ..model.lm_head import is_lm_head, vocabularies
from ..model.network import Network
from ..model.repeats import Layers

VOCAB_MULTIPLE = 128  # Megatron-LM's --make-vocab-size-divisible-by default
#: vLLM's ``DEFAULT_VOCAB_PADDING_SIZE`` (``vocab_parallel_embedding.pad_vocab_size``)
SERVING_VOCAB_MULTIPLE = 64


def padded_vocab(vocab: int, tp: int, serving: bool = False) -> int:
    """The vocabulary a tensor-parallel group shards when tp > 1: Megatron-LM's (training),
    padded to a multiple of 128 tp; with ``serving`` vLLM's, padded to a multiple of 64
    (``pad_vocab_size``) and divided by tp (vLLM requires tp to divide it; here a remainder
    rounds up to a multiple of tp)."""
    if tp <= 1:
        return vocab
    if serving:
        padded = -(-vocab // SERVING_VOCAB_MULTIPLE) * SERVING_VOCAB_MULTIPLE
        return -(-padded // tp) * tp
    multiple = VOCAB_MULTIPLE * tp
    return -(-vocab // multiple) * multiple


def served_kv_heads(kv_heads: int, tp: int) -> int:
    """The KV heads one GPU of a vLLM tensor-parallel group holds: kv_heads / tp, or where tp
    reaches kv_heads one, the same head on tp / kv_heads GPUs (vLLM's ``QKVParallelLinear``:
    ``num_kv_heads = 1`` and ``num_kv_head_replicas = divide(tp_size, total_num_kv_heads)``
    when ``tp_size >= total_num_kv_heads``, else ``divide(total_num_kv_heads, tp_size)``;
    ``ModelConfig.get_num_kv_heads``, the KV cache's heads a GPU, ``max(1, total // tp)``).
    Megatron-LM, which plan follows, has no such replication. That tp divides kv_heads or is a
    multiple of them is ``serving_tp.check_serving``'s to check."""
    return max(1, kv_heads // tp)


def unnamed_layers(network: Network) -> tuple[Any, ...]:
    """Every layer of ``network`` in order, a repeat's copies unrenamed (``Layers.unnamed``):
    what the layout rules read, none of which reads a copy's name."""
    assert isinstance(network.layers, Layers)
    return network.layers.unnamed()


def blocks_of(network: Network) -> list[int]:
    """Indices of the transformer blocks."""
    return [i for i, layer in enumerate(unnamed_layers(network))
            if isinstance(layer, Transformer)]


def shard_network(network: Network, tp: int, ep: int = 1, serving: bool = False) -> Network:
    """What one GPU of a tensor-parallel group (and an expert-parallel group) computes: every
    block with heads, kv_heads, ffn and a shared expert's width divided by tp (vLLM's
    ``DeepseekV2MLP`` shared experts: column- and row-parallel) and the experts it holds by ep
    (its router whole; a latent-attention block's latent projections and KV cache whole on
    every GPU, ``layers.mla``), the embedding and the logits with vocab / tp rows (padded,
    ``padded_vocab``: Megatron-LM's rule, or vLLM's with ``serving``, which also keeps one KV
    head a GPU where tp passes kv_heads, ``served_kv_heads``: its QKV GEMM, attention, K and V
    weights and KV cache then hold that head); other layers whole (``analysis.parallel``)."""
    if tp == 1 and ep == 1:
        return network
    vocabulary = vocabularies(network)

    def shard(layer: Any) -> Any:
        if isinstance(layer, Transformer):
            kv_heads = served_kv_heads(layer.kv_heads, tp) if serving else layer.kv_heads // tp
            layer = replace(layer, heads=layer.heads // tp, kv_heads=kv_heads,
                            ffn=layer.ffn // tp, shared_ffn=layer.shared_ffn // tp,
                            expert_shards=ep if layer.experts else 1)
        elif isinstance(layer, Embedding):
            layer = replace(layer, vocab=padded_vocab(layer.vocab, tp, serving) // tp)
        elif is_lm_head(layer, vocabulary):
            assert isinstance(layer, Linear)
            layer = replace(layer, out_features=padded_vocab(layer.out_features, tp, serving)
                                                     // tp)
        return layer

    assert isinstance(network.layers, Layers)  # a repeat's copies sharded once
    return replace(network, layers=network.layers.map(shard))


def replicated_layers(network: Network, tp: int) -> list[str]:
    """Layers with weights that tensor parallelism leaves whole on every GPU of the group."""
    if tp == 1:
        return []
    vocabulary = vocabularies(network)
    return [run.name(c) for run in network.layer_runs
            if run.layer.has_weights and not isinstance(run.layer, (Transformer, Embedding))
            and not is_lm_head(run.layer, vocabulary) and run.layer.parameters > 0
            and type(run.layer).__name__ != "Norm" for c in range(run.count)]


def stage_blocks(blocks: int, pp: int) -> tuple[int, ...]:
    """The transformer blocks each of ``pp`` stages runs, as evenly as they go, the first ones
    one more where they do not divide (126 over 16: 14 stages of 8, then 2 of 7)."""
    base, extra = divmod(blocks, pp)
    return tuple(base + (1 if stage < extra else 0) for stage in range(pp))


def gpu_blocks(blocks: int, pp: int, vp: int = 1) -> tuple[int, ...]:
    """The transformer blocks each of ``pp`` pipeline GPUs runs: ``stage_blocks``, or with
    ``vp`` model chunks a GPU (interleaved stages) the sum of its chunks, chunk c of the
    ``stage_blocks(blocks, pp x vp)`` on GPU c mod pp (126 over 16 x 2 chunks: 30 of 4, then 2
    of 3; GPUs 14 and 15 run 4 + 3)."""
    if vp == 1:
        return stage_blocks(blocks, pp)
    chunks = stage_blocks(blocks, pp * vp)
    return tuple(sum(chunks[gpu::pp]) for gpu in range(pp))


def gpu_chunks(network: Network, pp: int, vp: int) -> tuple[tuple[range, ...], ...]:
    """Per pipeline GPU, the layer indices of each model chunk it holds, in order (a range
    each): the model split into pp x vp chunks as ``stage_spans`` splits stages, chunk c on GPU
    c mod pp (Megatron-LM's interleaved assignment: with 8 layers, 2 GPUs and 2 chunks a GPU,
    GPU 0 runs layers 0-1 and 4-5)."""
    chunks = stage_spans(network, pp * vp)
    return tuple(tuple(chunks[gpu::pp]) for gpu in range(pp))


def split_stages(network: Network, pp: int) -> tuple[tuple[int, ...], ...]:
    """Layer indices of each pipeline stage (``analysis.parallel``; ``stage_spans`` as
    tuples)."""
    return tuple(tuple(span) for span in stage_spans(network, pp))


def stage_spans(network: Network, pp: int,
                counts: Sequence[int] | None = None) -> tuple[range, ...]:
    """The layers of each pipeline stage, a range of layer indices each (``analysis.parallel``):
    the transformer blocks split as ``stage_blocks`` splits them (or ``counts``, the blocks of
    each stage, where a caller splits them otherwise: serving's vLLM split,
    ``serving_pp.vllm_stage_blocks``; at most the blocks' number of stages), each stage from
    its first block to the next stage's, the layers before the first block in the first stage and
    those after the last block in the last. Read from the runs, in time that grows with them,
    not the copies (a layout search asks it once a layout)."""
    size = len(network.layers)
    assert isinstance(network.layers, Layers)
    blocks = [(start, run.count) for start, run in zip(network.layers.starts(),
                                                       network.layer_runs)
              if isinstance(run.layer, Transformer)]
    total = sum(count for _, count in blocks)
    if pp == 1 or not total:
        return (range(size),)
    if pp > total:  # more stages than blocks (no layout runs it): the last ones have none
        return _sparse_stages(network, pp)

    def block(j: int) -> int:  # the layer index of block j (0-based)
        for start, count in blocks:
            if j < count:
                return start + j
            j -= count
        raise IndexError(j)

    firsts, j = [], 0
    for count in (stage_blocks(total, pp) if counts is None else counts):
        firsts.append(block(j))
        j += count
    edges = [0, *firsts[1:], size]
    return tuple(range(a, b) for a, b in zip(edges, edges[1:]))


def _sparse_stages(network: Network, pp: int) -> tuple[range, ...]:
    """``stage_spans`` where pp is more than the blocks: stage i < blocks runs block i (the
    first also the layers before it, each the layers after it up to the next block), the
    stages after the last block's none, but the last, which runs the layers after it."""
    blocks = blocks_of(network)
    size = len(network.layers)
    edges = [0, *blocks[1:], blocks[-1] + 1]
    stages = [range(a, b) for a, b in zip(edges, edges[1:])]
    stages += [range(blocks[-1] + 1, blocks[-1] + 1)] * (pp - len(blocks) - 1)
    return (*stages, range(blocks[-1] + 1, size))
