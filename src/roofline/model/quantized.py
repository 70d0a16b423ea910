"""Which weights a stored weight format quantizes (``--weights int4|int8|fp8``, with
``--activations``), as vLLM serves a checkpoint: the one rule the GEMMs (``network_parts._gemm``),
memory (``analysis.memory``) and the precision line (``output.precision``) read.

vLLM gives a layer a quantized method through its quantization config's ``get_quant_method``
(``vllm/model_executor/layers/quantization/fp8.py``, ``awq.py``, ``gptq.py`` /
``utils/gptq_utils.py``: ``Fp8Config``, ``AWQConfig``, ``GPTQConfig``): a ``LinearBase`` layer
gets the format's linear method and a ``FusedMoE`` layer its MoE method; any other layer gets
None, and keeps the checkpoint's dtype (``--dtype``). So:

- the projections, the dense FFN, the routed and the shared experts: in the format;
- the embedding table: the model's dtype. ``VocabParallelEmbedding`` is no ``LinearBase``;
  given None, its ``__init__`` falls back to ``UnquantizedEmbeddingMethod``
  (``vllm/model_executor/layers/vocab_parallel_embedding.py``). An ``Embedding`` layer has no
  ``matrix_parameters``: memory keeps it at the model's dtype;
- the LM head (``model.lm_head``): its weights and its GEMM at the model's dtype, whatever
  ``--activations`` says. ``ParallelLMHead`` is a ``VocabParallelEmbedding``: the same
  fallback, its logits an ``F.linear`` on its own weights (GPTQ's ``lm_head: true`` aside,
  not the default, not modelled). A tied head reads the embedding's table (``b_operand``
  ``"tied"``), an untied one its own matrix, which memory keeps at the model's dtype too;
- a mixture of experts' router: at the model's dtype, its GEMM too, where vLLM builds it
  without the quantization config: DeepSeek-V2 and V3 (``DeepseekV2MoE``'s ``GateLinear``,
  given no ``quant_config``: ``vllm/model_executor/models/deepseek_v2.py``), Mixtral
  (``MixtralMoE``'s ``ReplicatedLinear(..., quant_config=None)``, "Gate always runs at half /
  full precision for now") and Qwen2-MoE (``Qwen2MoeSparseMoeBlock``'s, ``quant_config=None``).
  vLLM's Qwen3-MoE (``Qwen3MoeSparseMoeBlock``, ``qwen3_moe.py``) hands its gate the
  quantization config: a transformer block's ``quantized_router: true``, which the
  ``qwen3_moe`` config adapter sets, stores it in the format (a checkpoint that lists the gate
  among the modules it leaves unconverted keeps it 16-bit, as Qwen's own FP8 checkpoints list
  every ``mlp.gate``: a checkpoint's list is not read here);
- multi-head latent attention's absorbed decode products, ``k_up`` and ``v_up``
  (``layers.mla``): at the model's dtype. vLLM has no quantized batched GEMM for them:
  ``MLAAttention.process_weights_after_loading`` (``vllm/model_executor/layers/attention/
  mla_attention.py``; before, ``MLACommonImpl``'s in ``vllm/v1/attention/backends/mla/
  common.py``) takes ``kv_b_proj``'s weight through ``get_and_maybe_dequant_weights``
  (``quantization/utils/quant_utils.py``) at the activations' dtype and keeps ``W_UK_T`` and
  ``W_UV`` from it, "we just store fp16/bf16 copies and perform the bmm's in 16-bit". An
  unquantized ``kv_b_proj``'s weight comes back as it is (``weight.to(out_dtype)``, the same
  tensor): views, no copy. A quantized one's comes back dequantized, a new tensor, which the
  two views keep alive beside ``kv_b_proj``, still loaded in its format for the prefill's
  expanded form: memory holds heads x kv_lora_rank x (qk_nope_head_dim + v_head_dim) values
  a block more at the model's dtype (``dequantized_copies``; DeepSeek-V3 at tensor parallelism
  8, 16 heads a GPU: 16 x 512 x 256 x 2 B x 61 blocks = 255,852,544 B).

Training keeps every weight at the activations' dtype (a stored format is refused there,
``network_checks``), and with ``--activations`` other than the model's dtype (an fp8 recipe)
runs its weight GEMMs, forward and backward, in the activations' dtype, but for the LM head's
and a router's, which stay at the model's dtype, all three passes (``kept_in_training``), as
Megatron-Core runs them: ``GPTModel``'s ``output_layer`` is a plain
``tensor_parallel.ColumnParallelLinear``, outside Transformer Engine's fp8 autocast (a TE
layer only under ``fp8_output_proj`` with the MXFP8 recipe), and ``TopKRouter``'s gating,
``router_gating_linear``, computes in the input's dtype or ``moe_router_dtype`` (fp32)
(``megatron/core/models/gpt/gpt_model.py``, ``megatron/core/transformer/moe/router.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .gemm import UNQUANTIZED, GemmShape
from .layers import Captured, Embedding, Linear, Transformer, matrix_parameters
from .lm_head import is_lm_head, vocabularies

if TYPE_CHECKING:
    from .network import Network

#: the ``b_operand`` of a weight a GEMM reads as B: in the format, or kept at the model's dtype
#: where the serving rule says so (``in_format``)
WEIGHTS = ("weight", UNQUANTIZED)


#: the name a transformer block gives its router's GEMMs: ``<block>.router``
ROUTER = ".router"


def in_format(network: Network, shape: GemmShape) -> bool:
    """Whether ``shape`` reads a weight (``WEIGHTS``) stored in the weight format, computing in
    the activations' dtype: every weight but, in inference, one its layer keeps at the model's
    dtype (``UNQUANTIZED``) and an LM head's (``Network.lm_heads``), which then compute at the
    model's dtype; in training, every weight but those ``kept_in_training`` keeps (module
    docstring)."""
    if shape.b_operand not in WEIGHTS:
        return False
    if network.mode == "train":
        return not kept_in_training(network, shape)
    return shape.b_operand != UNQUANTIZED and shape.layer not in network.lm_heads


def kept_in_training(network: Network, shape: GemmShape) -> bool:
    """Whether a training step runs ``shape`` (any pass) at the model's dtype where its weight
    GEMMs run in other activations (``--activations fp8``): the LM head's and a router's, as
    Megatron-Core keeps them out of fp8 (module docstring)."""
    if network.mode != "train" or network.activation_dtype == network.operand_dtype:
        return False
    return (shape.layer in network.lm_heads or shape.b_operand == UNQUANTIZED
            or shape.layer.endswith(ROUTER))


def format_matrices(network: Network) -> int:
    """The parameters a weight format stores: every layer's ``matrix_parameters`` (which leave
    out a router kept at the model's dtype) but an LM head's (``is_lm_head``), times its
    copies."""
    vocabulary = vocabularies(network)
    return sum(matrix_parameters(layer) * count for count, layer in network.layer_groups()
               if not is_lm_head(layer, vocabulary))


def dequantized_copies(network: Network) -> int:
    """The values of MLA's 16-bit W_UK and W_UV that vLLM keeps beside a ``kv_b`` stored in a
    weight format (module docstring), at the model's dtype: heads x kv_lora_rank x
    (qk_nope_head_dim + v_head_dim) a latent-attention block, times its copies; 0 in training,
    and where ``kv_b`` is stored at the model's dtype (the two are then views of its weight)."""
    if network.mode == "train" or network.weight_dtype == network.operand_dtype:
        return 0
    return sum(getattr(layer, "absorbed_matrices", 0) * count
               for count, layer in network.layer_groups())


class Unquantized(NamedTuple):
    """What a network keeps at the model's dtype under a weight format (``unquantized``), for a
    reader: the precision line says each."""

    embedding: bool  # an embedding's table
    lm_head: str  # "tied" (it reads the embedding's table), "own" (its own matrix), or ""
    routers: bool  # a mixture of experts' router kept at the model's dtype
    quantized_routers: bool  # one stored in the format (``quantized_router``)
    absorbed: int  # the values of MLA's 16-bit W_UK and W_UV copies (``dequantized_copies``)


def unquantized(network: Network) -> Unquantized:
    """The network's weights that a weight format leaves at the model's dtype (the module
    docstring's rules), read off its layers, a captured module's off what it ran: a gather
    from a table, a GEMM whose B is a table (``tied``) or an LM head's matrix
    (``UNQUANTIZED``)."""
    embedding, head = False, ""
    routers: set[bool] = set()
    heads = network.lm_heads
    for run in network.layer_runs:
        layer = run.layer
        if isinstance(layer, Embedding):
            embedding = True
        elif isinstance(layer, Linear) and layer.tied:
            head = "tied"
        elif isinstance(layer, Linear) and layer.name in heads:
            head = head or "own"
        elif isinstance(layer, Captured):
            for item in layer.forward_items:
                if isinstance(item, GemmShape) and item.b_operand in ("tied", UNQUANTIZED):
                    head = "tied" if item.b_operand == "tied" else head or "own"
                elif getattr(item, "kind", "") == "aten.embedding":  # a gather from a table
                    embedding = True
        elif isinstance(layer, Transformer) and layer.experts:
            routers.add(layer.quantized_router)
    return Unquantized(embedding, head, False in routers, True in routers,
                       dequantized_copies(network))
