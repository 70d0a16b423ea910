"""Multi-head latent attention (MLA, DeepSeek-V2 and V3): the transformer block's attention when
it has ``kv_lora_rank`` (``transformer.Transformer``; its fields ``q_lora_rank``,
``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``).

Keys and values are not projected per token per head from the hidden state but through one
latent: ``kv_a`` (transformers' ``kv_a_proj_with_mqa``) makes, per token, a ``kv_lora_rank``-wide
latent c (then RMS-normed) and one ``qk_rope_head_dim``-wide rotary key k_pe that every head
shares; ``kv_b`` (``kv_b_proj``) expands c to each head's ``qk_nope_head_dim`` key part and
``v_head_dim`` value. Queries go through a ``q_lora_rank`` latent too (``q_a_proj``, its RMSNorm,
``q_b_proj`` to heads x (nope + rope)), or with ``q_lora_rank`` 0 (DeepSeek-V2-Lite) one
``q_proj``. Attention then runs with a query/key head dim of nope + rope (DeepSeek-V3: 128 + 64 =
192) and a value head dim of ``v_head_dim`` (128); ``proj`` (``o_proj``) is heads x v_head_dim ->
hidden. As transformers' ``DeepseekV3Attention`` and vLLM's ``DeepseekV2MLAAttention``
(vllm/model_executor/models/deepseek_v2.py), which runs the two down projections from the hidden
state as one GEMM, ``fused_qkv_a_proj`` (``MergedColumnParallelLinear`` over [q_lora_rank,
kv_lora_rank + qk_rope_head_dim], ``disable_tp=True``: whole on every GPU of a tensor-parallel
group), as this module does (``qkv_a``; without q_lora_rank, ``q`` and ``kv_a`` apart).

The KV cache holds, per token and layer, the normed latent and the rotary key: kv_lora_rank +
qk_rope_head_dim values (DeepSeek-V3: 576, 1,152 bytes in bf16; 61 layers: 70,272 bytes a token),
for all heads at once, as vLLM's MLA backends store it (vllm/v1/attention/backends/mla/common.py:
``MLACommonBackend.get_kv_cache_shape`` (num_blocks, block_size, head_size), head size 576 its one
supported; ``ModelConfig.get_num_kv_heads`` returns 1 for MLA, "When using MLA during decode it
becomes MQA", not divided by tensor parallelism: every GPU of the group holds the whole latent
cache of its layers).

Forward GEMMs (M x N x K; T tokens, H heads, Lq = q_lora_rank, Lkv = kv_lora_rank, P = nope, R =
rope, V = v_head_dim, h hidden):

- training and prefill, the expanded form (vLLM's "compute friendly approach",
  ``_forward_prefill``): ``qkv_a`` T x (Lq + Lkv + R) x h; the two latent RMSNorms (ops on T Lq
  and T Lkv values); ``q_b`` T x H (P + R) x Lq; ``kv_b`` T x H (P + V) x Lkv; the rotary
  embedding on q_pe and k_pe (T (H R + R) values); attention with head dims P + R (scores) and V
  (values), one K and V per head; ``proj`` T x h x H V.
- decode, the absorbed form (vLLM's "data-movement friendly approach", ``MLACommonImpl.forward``'s
  decode branch): ``qkv_a``, the norms and ``q_b`` as above, no ``kv_b`` (the new token's latent
  goes to the cache); ``k_up``, W_UK folded into the query, ``torch.bmm(decode_q_nope,
  self.W_UK_T)``: H batched T x Lkv x P; attention as multi-query attention over the latent
  cache, head dims Lkv + R (scores) and Lkv (values: the latent itself), the cache's Lkv + R
  values a token read once for all H heads; ``v_up``, W_UV after it (``_v_up_proj``,
  ``torch.bmm(x, self.W_UV)``): H batched T x V x Lkv; ``proj`` as above. W_UK and W_UV are
  ``kv_b``'s weight split per head, which vLLM keeps at the model's dtype whatever the weight
  format (``process_weights_after_loading`` dequantizes a quantized ``kv_b`` into them:
  ``model.quantized``): their GEMMs read them as weights at the model's dtype
  (``b_operand`` ``"unquantized"``) and compute there, and the parameters count them once, as
  ``kv_b``; a ``kv_b`` stored in a weight format adds their 16-bit copies to memory
  (``absorbed_matrices``).

The attention kernel takes the values at v_head_dim, as FlashAttention-3 on Hopper does; vLLM
pads V to the query/key head dim for kernels that need one head dim (its
``_flash_attn_varlen_diff_headdims``: DeepSeek-V3's 128 values a head read and computed as 192):
not modelled.

Backward (training), in reverse: ``proj``, the attention kernel's, ``rotary-backward``, ``kv_b``
and ``q_b`` (data and weight gradients), the two latent norms' backward, ``qkv_a`` (its data
gradient only when an earlier layer has weights), as the block's other projections.

Not modelled, and refused where a block asks for it: a sliding window (vLLM's MLA refuses one,
"Sliding window attention is not supported for MLA"), ``qk_norm``, biases, kv_heads other than
heads (each head has its own keys and values, from the shared latent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..gemm import UNQUANTIZED, GemmShape
from ..ops import OpShape
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields
    from .transformer import Transformer

Item = GemmShape | OpShape
#: model.yaml's MLA fields (``Transformer``'s too), each a positive integer; the first two the
#: latent ranks
FIELDS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def read_fields(fields: Fields, heads: int) -> dict[str, int]:
    """The block's MLA fields (``FIELDS``; each 0 without ``kv_lora_rank``) and its head_dim, the
    query/key head dim nope + rope; a block without ``kv_lora_rank`` given another refused, and
    an MLA block given a field it does not take (module docstring)."""
    if not fields.has("kv_lora_rank"):
        for key in FIELDS:
            if fields.has(key):
                raise fields.fail(key, f"{key} is a latent-attention (MLA) field: it needs "
                                       f"kv_lora_rank")
        return {}
    for key, why in (("head_dim", "it is qk_nope_head_dim + qk_rope_head_dim"),
                     ("window", "a sliding window is not modelled with it (vLLM refuses one)"),
                     ("qk_norm", "q and k norms are not modelled with it"),
                     ("bias", "biases are not modelled with it")):
        if fields.has(key) and not (key == "qk_norm" and fields.get(key) is False
                                    or key == "bias" and fields.get(key) == "none"):
            raise fields.fail(key, f"not taken by a latent-attention (MLA) block: {why}")
    if fields.has("kv_heads") and fields.get("kv_heads") != heads:
        raise fields.fail("kv_heads", f"a latent-attention (MLA) block gives every head its own "
                                      f"keys and values from the shared latent: kv_heads is heads "
                                      f"({heads}) or left out")
    out = {key: fields.positive_int(key) for key in FIELDS if key != "q_lora_rank"}
    out["q_lora_rank"] = fields.positive_int("q_lora_rank", 0)
    out["head_dim"] = out["qk_nope_head_dim"] + out["qk_rope_head_dim"]
    return out


def cache_width(b: Transformer) -> int:
    """Values a token keeps in one block's cache: the latent and the rotary key, Lkv + R."""
    return b.kv_lora_rank + b.qk_rope_head_dim


def matrices(b: Transformer) -> int:
    """The attention's weight matrices: q (through its latent or not), kv_a, kv_b and proj."""
    h, heads, qk = b.hidden, b.heads, b.head_dim
    q = (h * b.q_lora_rank + b.q_lora_rank * heads * qk) if b.q_lora_rank else h * heads * qk
    kv = h * cache_width(b) + b.kv_lora_rank * heads * (b.qk_nope_head_dim + b.v_head_dim)
    return q + kv + heads * b.v_head_dim * h


def absorbed_matrices(b: Transformer) -> int:
    """W_UK and W_UV, the decode's absorbed up projections, heads x Lkv x (P + V) values: the
    copies vLLM keeps beside a ``kv_b`` stored in a weight format (``model.quantized``)."""
    return b.heads * b.kv_lora_rank * (b.qk_nope_head_dim + b.v_head_dim)


def norms(b: Transformer) -> int:
    """The two latent norms' scales (q's only with q_lora_rank; with layernorm a shift each)."""
    return (b.q_lora_rank + b.kv_lora_rank) * (2 if b.norm == "layernorm" else 1)


def out_width(b: Transformer) -> int:
    """``proj``'s K: heads x v_head_dim."""
    return b.heads * b.v_head_dim


def dims(b: Transformer, step: Step) -> tuple[int, int, int]:
    """The attention kernel's query/key head dim, value head dim and the key/value heads it reads:
    (P + R, V, heads), or in decode, absorbed, (Lkv + R, Lkv, 1) (module docstring)."""
    if step.phase == "decode":
        return cache_width(b), b.kv_lora_rank, 1
    return b.head_dim, b.v_head_dim, b.heads


def projections(b: Transformer, step: Step) -> list[Item]:
    """What runs between norm1 and the attention kernel (module docstring), the KV-cache write
    among it (``kv_write``)."""
    t, heads = step.tokens, b.heads
    items: list[Item] = []
    if b.q_lora_rank:
        items += b._proj_forward("qkv_a", b.q_lora_rank + cache_width(b), b.hidden, step, False)
        items.append(b._op("forward", b.norm, t * b.q_lora_rank, step, "q_a"))
    else:
        items += b._proj_forward("q", heads * b.head_dim, b.hidden, step, False)
        items += b._proj_forward("kv_a", cache_width(b), b.hidden, step, False)
    items.append(b._op("forward", b.norm, t * b.kv_lora_rank, step, "kv_a"))
    if b.q_lora_rank:
        items += b._proj_forward("q_b", heads * b.head_dim, b.q_lora_rank, step, False)
    if step.phase != "decode":
        items += b._proj_forward("kv_b", heads * (b.qk_nope_head_dim + b.v_head_dim),
                                 b.kv_lora_rank, step, False)
    if b.rotary:
        items.append(b._op("forward", "rotary", t * rotary_values(b), step, "attn"))
    items += b._kv_cache_write(step)
    if step.phase == "decode":
        items.append(_absorbed(b, step, "k_up", b.kv_lora_rank, b.qk_nope_head_dim))
    return items


def after_attention(b: Transformer, step: Step) -> list[Item]:
    """Decode's ``v_up`` (W_UV after the latent attention); nothing in the expanded form."""
    if step.phase != "decode":
        return []
    return [_absorbed(b, step, "v_up", b.v_head_dim, b.kv_lora_rank)]


def _absorbed(b: Transformer, step: Step, part: str, n: int, k: int) -> GemmShape:
    """One of decode's per-head products, H batched T x n x k: vLLM's (N, B, K) x (N, K, n)
    ``torch.bmm``, one matrix of W_UK or W_UV a head (``kv_b``'s weight, kept at the model's
    dtype whatever the weight format: ``UNQUANTIZED``)."""
    return GemmShape(f"{b.name}.{part}", "forward", step.tokens, n, k,
                     (step.row_role, f"{part}.out", f"{part}.in"), (step.per_sample, 0, 0),
                     b.heads, b_operand=UNQUANTIZED)


def rotary_values(b: Transformer) -> int:
    """Values a token's rotary embedding turns: each head's q_pe and the one shared k_pe."""
    return (b.heads + 1) * b.qk_rope_head_dim


def backward(b: Transformer, step: Step, data_grad: bool) -> list[Item]:
    """The projections' backward, after the attention kernel's (module docstring)."""
    t, heads = step.tokens, b.heads
    items: list[Item] = []
    if b.rotary:
        items.append(b._op("backward", "rotary-backward", t * rotary_values(b), step, "attn"))
    items += b._proj_backward("kv_b", heads * (b.qk_nope_head_dim + b.v_head_dim),
                              b.kv_lora_rank, step, False)
    if b.q_lora_rank:
        items += b._proj_backward("q_b", heads * b.head_dim, b.q_lora_rank, step, False)
    items.append(b._op("backward", f"{b.norm}-backward", t * b.kv_lora_rank, step, "kv_a"))
    if b.q_lora_rank:
        items.append(b._op("backward", f"{b.norm}-backward", t * b.q_lora_rank, step, "q_a"))
        items += b._proj_backward("qkv_a", b.q_lora_rank + cache_width(b), b.hidden, step,
                                  False, data_grad)
    else:
        items += b._proj_backward("kv_a", cache_width(b), b.hidden, step, False, data_grad)
        items += b._proj_backward("q", heads * b.head_dim, b.hidden, step, False, data_grad)
    return items


def kept(b: Transformer, step: Step) -> int:
    """Training, ``saved_bytes``' attention-side tensors of an MLA block in place of Q, K, V and
    the projection's input: the down projections' output (the latent norms' inputs and k_pe), T
    (Lq + Lkv + R) e; the norms' outputs, the up projections' inputs, T (Lq + Lkv) e; Q, K, V
    for the kernel, T H (2 (P + R) + V) e; the projection's input T H V e. (Without
    q_lora_rank, no q latent: Lq 0.)"""
    t, e, heads = step.tokens, step.e, b.heads
    latent = t * (b.q_lora_rank + cache_width(b)) * e + t * (b.q_lora_rank + b.kv_lora_rank) * e
    return latent + t * heads * (2 * b.head_dim + b.v_head_dim) * e + t * out_width(b) * e


def live(b: Transformer, step: Step) -> int:
    """Inference, ``live_bytes``' attention branch of an MLA block: the latents T (Lq + Lkv + R)
    e, then Q, K, V and the attention output at the kernel's head dims (``dims``; in decode the
    absorbed query and output, the keys read from the cache)."""
    t, e, heads = step.tokens, step.e, b.heads
    qk, v, groups = dims(b, step)
    kv = 0 if step.phase == "decode" else t * groups * (qk + v)
    return t * (b.q_lora_rank + cache_width(b)) * e + (t * heads * (qk + v) + kv) * e

