"""A language model's output layer, the LM head: a Linear whose outputs are an embedding's
vocabulary (the logits). One rule read by the tensor-parallel shard (vocabulary-parallel, padded
as Megatron-LM or vLLM pads it) and by the weight formats (``model.quantized``: a weight format
leaves its weights and its GEMM at the model's dtype, as vLLM serves its ``ParallelLMHead``). A
tied head (GPT-2's) reads the embedding's table; a captured module's head is found by the same
rule, a matrix whose rows are the vocabulary of the table its embedding gathers from
(``capture_gemms._weight_kind``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .layers import Embedding, Linear
from .repeats import Layers

if TYPE_CHECKING:
    from .network import Network


def vocabularies(network: Network) -> set[int]:
    """The vocabularies of the network's embeddings, kept with its layers: a part of a model
    cut from it (a pipeline stage without the embedding, ``analysis.serving_pp``) is given the
    whole model's (``keep_vocabularies``), so that its head is still known for one."""
    return _layers(network).cached("vocabularies", lambda: {
        run.layer.vocab for run in network.layer_runs if isinstance(run.layer, Embedding)})


def keep_vocabularies(part: Network, whole: Network) -> Network:
    """``part``, a network of some of ``whole``'s layers, knowing ``whole``'s vocabularies."""
    known = vocabularies(whole)
    _layers(part).cached("vocabularies", lambda: known)
    return part


def is_lm_head(layer: Any, vocabulary: set[int]) -> bool:
    """Whether ``layer`` writes logits over one of ``vocabulary`` (``vocabularies``)."""
    return isinstance(layer, Linear) and layer.out_features in vocabulary


def lm_head_names(network: Network) -> frozenset[str]:
    """The names of the network's LM heads (an untied one is a Linear of its own), kept with
    its layers."""
    vocabulary = vocabularies(network)
    return _layers(network).cached("lm_heads", lambda: frozenset(
        run.layer.name for run in network.layer_runs if is_lm_head(run.layer, vocabulary)))


def _layers(network: Network) -> Layers:
    """The network's layers as runs, where what depends on them alone is kept."""
    layers = network.layers
    assert isinstance(layers, Layers)
    return layers
