"""``{type: transformer, hidden, heads, kv_heads, head_dim, ffn, gated, causal, window, attention,
norm, bias, dropout, experts, top_k, shared_ffn, rotary, qk_norm, q_lora_rank, kv_lora_rank,
qk_nope_head_dim, qk_rope_head_dim, v_head_dim, repeat, name}``: a pre-norm transformer block.

Defaults: kv_heads = heads (grouped-query attention when fewer), head_dim = hidden / heads,
ffn = 4 x hidden, gated (SwiGLU FFN) false, causal false, window none, attention ``flash`` (or
``naive``),
norm ``layernorm`` (or ``rmsnorm``), bias ``none`` (``all``: every projection; ``qkv``: the
fused QKV projection only, as Qwen2), dropout 0, experts 0 (a dense FFN; experts E with top_k k:
a mixture of experts), rotary false (true: a rotary position embedding on q and k, RoPE, as
Llama), qk_norm false (true: each query and key head normalized over its head_dim by the block's
``norm`` before the rotary embedding, with a head_dim-wide scale of its own for q and one for k,
as Qwen3's ``q_norm`` and ``k_norm``), shared_ffn 0 (N, with experts: a gated, or with ``gated:
false`` plain, FFN of width N that every token runs beside its top_k routed experts, as
DeepSeek's shared experts: ``shared_up`` T x N (2 N gated) x hidden, its activation,
``shared_down`` T x hidden x N, after the routed experts' combine; its weights are always
active), kv_lora_rank 0 (with it, and qk_nope_head_dim, qk_rope_head_dim, v_head_dim and
optionally q_lora_rank: multi-head latent attention, DeepSeek's MLA, whose projections, KV cache
and decode form are ``mla``'s, in place of the ``qkv`` projection and K/V cache below; head_dim
is then nope + rope). With T tokens (batch x seq; batch in decode), hq = heads
x head_dim, hkv = kv_heads x head_dim, G = batch x heads, and a query length q and key length s
(both seq; in decode q = 1 against a KV cache of s = seq):

Forward, in order (M x N x K):
  norm1 (op); ``qkv`` T x (hq + 2 hkv) x hidden; with ``qk_norm: true`` the per-head norm of q
  and k (an op of the block's ``norm`` kind on its ``attn``: T (hq + hkv) values, read and
  written at the activations' size, as the block's other norms); with ``rotary: true`` the
  rotary position embedding on q and k (op ``rotary``: T (hq + hkv) values, 3 FLOPs each); in
  inference with a
  KV cache (a causal block) the new tokens' K and V copied into it (op ``kv-cache-write``: T 2
  hkv values read at the activations' size and written at the cache's);
  attention, naive: ``scores`` G batched q x s x head_dim, softmax (op), ``context`` G batched
  q x head_dim x s; flash: one fused kernel (op ``flash-attention``: 4 G q s head_dim FLOPs,
  halved when causal outside decode; bytes: Q, K, V read once, O and the row log-sum-exp
  written once; no s x s matrix in memory; in decode K and V are read at the KV cache's size,
  and a cache narrower than the activations adds 2 FLOPs per K and V element to dequantize);
  ``proj`` T x hidden x hq; residual add (op); norm2 (op);
  dense FFN: ``ffn_up`` T x ffn x hidden (T x 2 ffn x hidden when gated), activation (op: gelu;
  gated: silu and the gate product), ``ffn_down`` T x hidden x ffn;
  mixture of experts: ``router`` T x E x hidden, top-k softmax (op), ``expert_up`` and
  ``expert_down`` as batched GEMMs over the experts that get tokens, each with ceil(T k / E)
  tokens (routing spread evenly; when T k < E, T k experts of one token each: a decode step at
  batch 1 runs, and reads the weights of, top_k experts), the activation ops on T k rows, and
  the weighted combine (op); one GPU of an expert-parallel group (``expert_shards``) runs the
  expert GEMMs over the experts it holds, ``local_experts``, and the router over all E;
  with ``shared_ffn`` the shared expert after the combine (``shared_up``, its activation,
  ``shared_down``, and its add, op ``residual`` on ``shared``; backward, its add's, its
  projections' and its activation's, before the routed experts'); residual add (op).
Backward, in reverse: every weight GEMM has its data-gradient GEMM (the first projection's only
when an earlier layer has weights) and its weight-gradient GEMM; each batched attention GEMM has
two data-gradient GEMMs (scores: dQ = dS.K, dK = dS^T.Q; context: dP = dO.V^T, dV = P^T.dO);
the fused flash kernel's backward recomputes the scores (10 G q s head_dim FLOPs: five GEMMs,
halved when causal; bytes: Q, K, V, O, dO read, dQ, dK, dV written); every op has its
backward op (the q/k norm's: ``rmsnorm-backward`` on dq and dk, T (hq + hkv) values, after
the rotary embedding's).

``window: w`` (causal only): each token attends to the last w tokens, its own included (a
sliding window, Mistral 7B v0.1's 4096). With flash attention the kernel does only the window's
work and the KV cache keeps w tokens, as FlashAttention's ``window_size`` and TensorRT-LLM's
cyclic KV cache do: the causal pairs are s^2 / 2 up to s = w and s w - w^2 / 2 beyond (the
band's area, s^2 / 2 less the (s - w)^2 / 2 triangle it leaves out), decode reads min(s, w)
keys, and the cache holds min(seq, w) tokens. Naive attention computes the whole masked score
matrix and keeps every token, as torch's eager attention does: the window changes nothing there.

With attention naive, kv_heads = heads, ffn = 4 hidden and no gating, a training step's GEMM
FLOPs per block are 72 B s h^2 (1 + s / (6 h)) / L of Megatron-LM's formula (Narayanan et al.,
2021).

Recomputation (training, ``recompute``): what ``saved_bytes`` does not keep, the backward pass
makes again from what it does, ``recomputed``: with ``full`` the whole block's forward (its
GEMMs then 96 B s h^2 (1 + s / (6 h)) a block, 4/3 of the above), with ``selective`` and naive
attention the attention core (its scores and context GEMMs, 4 B s^2 h, and its softmax and
dropout), with flash nothing (its backward already recomputes the scores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..gemm import UNQUANTIZED, GemmShape
from ..ops import AttentionShape, OpShape, SumShape, elementwise
from . import mla
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

Item = GemmShape | OpShape
_KEYS = frozenset({"type", "name", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated",
                   "causal", "window", "attention", "norm", "bias", "dropout", "experts",
                   "top_k", "shared_ffn", "quantized_router", "rotary", "qk_norm", "repeat",
                   *mla.FIELDS})
ATTENTION_FORMS = ("flash", "naive")
LSE_BYTES = 4  # FlashAttention keeps one fp32 log-sum-exp per query row for the backward pass


@dataclass(frozen=True)
class Transformer:
    """One transformer block (see the module docstring for its GEMMs and ops)."""

    name: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    gated: bool = False
    causal: bool = False
    window: int = 0  # 0: none; else the last ``window`` tokens each token attends to
    attention: str = "flash"
    norm: str = "layernorm"
    bias: str = "none"
    dropout: float = 0.0
    experts: int = 0
    top_k: int = 0
    rotary: bool = False  # a rotary position embedding on q and k (Llama, Mistral, Qwen2)
    #: each q and k head normalized over head_dim (the block's ``norm``) before the rotary
    #: embedding, a head_dim-wide scale each (Qwen3's q_norm and k_norm)
    qk_norm: bool = False
    #: with experts: the width of the gated FFN every token runs beside its routed experts
    #: (DeepSeek's shared experts, moe_intermediate_size x n_shared_experts); 0: none
    shared_ffn: int = 0
    #: with experts: whether a weight format stores the router too (vLLM's Qwen3-MoE hands
    #: its gate the quantization config); False: the router stays at the model's dtype, its
    #: GEMM too, as vLLM builds DeepSeek's, Mixtral's and Qwen2-MoE's (``model.quantized``)
    quantized_router: bool = False
    #: multi-head latent attention (``mla``; 0: none): the query latent's rank (0: one full
    #: query projection), the key/value latent's, and the per-head widths of the query/key part
    #: without and with the rotary embedding and of the values
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    #: one GPU of an expert-parallel group of this many: it holds ``local_experts`` of the
    #: experts and their GEMMs; the router still scores all ``experts`` (set by
    #: ``analysis.parallel.shard_network``, never by a model file)
    expert_shards: int = 1
    has_weights = True
    needs_seq = True  # attention runs over seq tokens: the model must give seq

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Transformer:
        fields.reject_unknown(_KEYS)
        hidden, heads = fields.positive_int("hidden"), fields.positive_int("heads")
        kv_heads = fields.positive_int("kv_heads", heads)
        if heads % kv_heads:
            raise fields.fail("kv_heads", f"expected a divisor of heads ({heads}), got {kv_heads}")
        latent = mla.read_fields(fields, heads)
        if not fields.has("head_dim") and not latent and hidden % heads:
            raise fields.fail("heads", f"hidden ({hidden}) is not a multiple of heads ({heads}); "
                                       f"give head_dim")
        experts = fields.positive_int("experts", 0)
        top_k = _top_k(fields, experts)
        shared = fields.positive_int("shared_ffn", 0)
        if shared and not experts:
            raise fields.fail("shared_ffn", "a shared expert runs beside routed ones: shared_ffn "
                                            "needs experts (a dense block's FFN is ffn)")
        quantized_router = fields.boolean("quantized_router", False)
        if fields.has("quantized_router") and not experts:
            raise fields.fail("quantized_router", "a router routes tokens to experts: "
                                                  "quantized_router needs experts")
        causal = fields.boolean("causal", False)
        window = fields.positive_int("window", 0)
        if window and not causal:
            raise fields.fail("window", "a sliding window needs causal: true (each token attends "
                                        "to the last window tokens before it)")
        return cls(
            name=fields.string("name", f"block{index + 1}"), hidden=hidden, heads=heads,
            kv_heads=kv_heads,
            head_dim=latent.pop("head_dim", 0) or fields.positive_int("head_dim", hidden // heads),
            ffn=fields.positive_int("ffn", 4 * hidden), gated=fields.boolean("gated", False),
            causal=causal, window=window,
            attention=fields.choice("attention", ATTENTION_FORMS, "flash"),
            norm=fields.choice("norm", ("layernorm", "rmsnorm"), "layernorm"),
            bias=fields.choice("bias", ("none", "all", "qkv"), "none"),
            dropout=_dropout(fields), experts=experts, top_k=top_k, shared_ffn=shared,
            quantized_router=quantized_router,
            rotary=fields.boolean("rotary", False), qk_norm=fields.boolean("qk_norm", False),
            **latent)

    @property
    def hq(self) -> int:
        return self.heads * self.head_dim

    @property
    def hkv(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def in_width(self) -> int:
        return self.hidden

    out_width = in_width

    @property
    def up_width(self) -> int:
        return self.ffn * (2 if self.gated else 1)

    @property
    def local_experts(self) -> int:
        """The experts whose weights this block holds and whose GEMMs it runs: all E, or E /
        ``expert_shards`` on one GPU of an expert-parallel group. The router is not split: each
        GPU scores its own tokens against every expert before they are sent to the GPUs that
        hold their experts, so its N, its logits and its weight stay E."""
        return self.experts // self.expert_shards

    @property
    def expert_parameters(self) -> int:
        """The weights (and with ``bias: all`` the biases) of the experts this block holds
        (``local_experts``); 0 in a dense block."""
        return self.local_experts * self._expert_size

    @property
    def _expert_size(self) -> int:
        """One expert's weights, and its biases with ``bias: all``."""
        size = self.hidden * self.up_width + self.ffn * self.hidden
        return size + (self.up_width + self.hidden if self.bias == "all" else 0)

    @property
    def mla(self) -> bool:
        """Multi-head latent attention (``kv_lora_rank``; module ``mla``)."""
        return self.kv_lora_rank > 0

    @property
    def shared_up(self) -> int:
        """The shared expert's ``shared_up`` width: shared_ffn, 2 shared_ffn gated."""
        return self.shared_ffn * (2 if self.gated else 1)

    @property
    def _proj_in(self) -> int:
        """``proj``'s K: hq, or with MLA heads x v_head_dim."""
        return mla.out_width(self) if self.mla else self.hq

    def _attention_matrices(self) -> int:
        """The attention's weight matrices: ``qkv`` and ``proj``, or MLA's (``mla.matrices``)."""
        if self.mla:
            return mla.matrices(self)
        return self.hidden * (self.hq + 2 * self.hkv) + self.hq * self.hidden

    def _ffn_matrices(self) -> int:
        """The FFN's weight matrices, or the experts held, the router and the shared expert."""
        ffn = self.hidden * self.up_width + self.ffn * self.hidden
        if self.experts:
            ffn = (self.local_experts * ffn + self._router_matrix
                   + self.hidden * self.shared_up + self.shared_ffn * self.hidden)
        return ffn

    @property
    def _router_matrix(self) -> int:
        """The router's weights, hidden x experts (0 in a dense block)."""
        return self.hidden * self.experts

    @property
    def _router_operand(self) -> str:
        """What the router's GEMMs read as B (``GemmShape.b_operand``): a weight in the weight
        format with ``quantized_router``, else one kept at the model's dtype
        (``model.quantized``)."""
        return "weight" if self.quantized_router else UNQUANTIZED

    @property
    def parameters(self) -> int:
        """Weights (and biases) of the projections, FFN or experts held, router and shared
        expert, and 2 norms (with ``qk_norm`` 2 more, head_dim wide: q's and k's, every head
        sharing its scale; with MLA the latents' norms, ``mla.norms``)."""
        norms = 2 * (self.hidden + (self.head_dim if self.qk_norm else 0)) * (
            2 if self.norm == "layernorm" else 1) + (mla.norms(self) if self.mla else 0)
        biases = 0
        if self.bias != "none":
            biases = self.hq + 2 * self.hkv
        if self.bias == "all":
            ffn_bias = self.up_width + self.hidden
            biases += self.hidden + (self.local_experts or 1) * ffn_bias
            if self.shared_ffn:
                biases += self.shared_up + self.hidden
        return self._attention_matrices() + self._ffn_matrices() + norms + biases

    @property
    def idle_parameters(self) -> int:
        """The parameters a token does not run: the E - top_k experts it is not routed to
        (their weights, and their biases with ``bias: all``); 0 in a dense block. Of a shard's
        ``local_experts``, those beyond top_k (none when it holds top_k or fewer)."""
        if not self.experts:
            return 0
        return max(0, self.local_experts - self.top_k) * self._expert_size

    @property
    def matrix_parameters(self) -> int:
        """The weights GEMMs read as their B operand that a weight format (int4, int8, fp8)
        stores: the projections, the FFN or the experts held and the shared expert, the router
        only with ``quantized_router`` (``model.quantized``); biases, norms and an unquantized
        router stay at the model's dtype."""
        router = 0 if self.quantized_router else self._router_matrix
        return self._attention_matrices() + self._ffn_matrices() - router

    @property
    def absorbed_matrices(self) -> int:
        """MLA's W_UK and W_UV as vLLM keeps them for the absorbed decode, heads x kv_lora_rank
        x (qk_nope_head_dim + v_head_dim) values (``mla.absorbed_matrices``; 0 without MLA):
        16-bit copies beside a ``kv_b`` stored in a weight format (``model.quantized``)."""
        return mla.absorbed_matrices(self) if self.mla else 0

    # -- memory -------------------------------------------------------------------------------

    def kv_cache_bytes(self, step: Step) -> int:
        """Inference: the K and V of ``seq`` tokens per sequence, 2 x kv_heads x head_dim x seq
        x batch elements of the KV cache's size (with MLA the latent and rotary key,
        (kv_lora_rank + qk_rope_head_dim) x seq x batch, shared by every head: ``mla``; in
        both, prefill writes them, decode reads them); none
        in training, nor in a bidirectional block (``causal: false``, an encoder such as BERT):
        a new token would change every earlier token's K and V, so nothing is kept to decode
        against, and the K and V of a prefill are its activations."""
        if step.phase == "train" or not self.causal:
            return 0
        return self._cache_width * self._kept(step.seq or 1) * step.batch * step.kv_e

    @property
    def _cache_width(self) -> int:
        """Values a token keeps in the KV cache: its K and V, 2 hkv, or with MLA its latent and
        rotary key, kv_lora_rank + qk_rope_head_dim, for all heads (``mla``)."""
        return mla.cache_width(self) if self.mla else 2 * self.hkv

    @property
    def active_window(self) -> int:
        """The window the step honours: ``window`` with flash attention, 0 (none) without one
        or with naive attention, which computes and keeps every token (module docstring)."""
        return self.window if self.attention == "flash" else 0

    def _kept(self, s: int) -> int:
        """Tokens of a sequence of ``s`` whose K and V flash attention reads and the cache
        keeps: the last ``active_window``, else all ``s``."""
        return min(s, self.active_window) if self.active_window else s

    def _ffn_rows(self, step: Step) -> int:
        """Rows the FFN's inner tensors have: T, or T x top_k routed rows (experts)."""
        return step.tokens * (self.top_k if self.experts else 1)

    def saved_bytes(self, step: Step, recompute: str) -> int:
        """Training: what the forward pass keeps for the backward pass, per block (Korthikanti
        et al., "Reducing Activation Recomputation in Large Transformer Models", 2022, sec. 4):

        - ``none``: the two norms' inputs 2 T h e; the QKV input T h e; Q, K, V T (hq + 2 hkv)
          e; the attention core: naive, the softmax output G q s e, and with dropout its mask
          G q s (1 byte) and output G q s e; flash, the log-sum-exp G q 4 bytes (no s x s
          matrix); the projection's input T hq e; the FFN input T h e; the FFN's inner tensors,
          R up e + R ffn e (R = T, or T x top_k with experts; gated: up = 2 ffn, plus the
          gate's product R ffn e; a shared expert's likewise over T rows), the router's logits
          T E e; with MLA ``mla.kept`` in place of Q, K, V and the projection's input; dropout
          masks T h (1 byte) after
          the attention and the FFN; with ``qk_norm`` the q/k norm's input, the projected q and
          k, T (hq + hkv) e (a norm's input, kept as the block's two norms' are).
          With e = 2, dropout, naive attention, kv_heads = heads, ffn = 4h, ungated: 34 s b h +
          5 a s^2 b bytes, the paper's per-layer figure.
        - ``selective``: the attention core is recomputed: the G q s terms go (34 s b h).
          FlashAttention already recomputes it, so with flash selective equals none.
        - ``full``: only the block's input, T h e (2 s b h); the block is recomputed in the
          backward pass.

        What is recomputed, and timed in the step, is ``recomputed``'s.
        """
        t, e, h = step.tokens, step.e, self.hidden
        if recompute == "full":
            return t * h * e
        q, s, count = self._attention_shape(step)
        masks = 2 * t * h if self.dropout else 0
        rows = self._ffn_rows(step)
        inner = rows * self.up_width * e + rows * self.ffn * e * (2 if self.gated else 1)
        inner += t * self.shared_up * e + t * self.shared_ffn * e * (2 if self.gated else 1)
        router = t * self.experts * e if self.experts else 0
        qk = t * (self.hq + self.hkv) * e if self.qk_norm else 0
        attention = (mla.kept(self, step) if self.mla
                     else t * (self.hq + 2 * self.hkv) * e + t * self.hq * e)
        kept = (2 * t * h * e + t * h * e + attention + t * h * e + inner + router + masks + qk)
        if self.attention == "flash":
            return kept + count * q * LSE_BYTES
        if recompute == "selective":
            return kept
        core = count * q * s * e * (2 if self.dropout else 1) + (count * q * s
                                                                 if self.dropout else 0)
        return kept + core

    def live_bytes(self, step: Step) -> int:
        """Inference: the most this block holds at once: the residual stream T h e, plus the
        larger branch: attention (Q, K, V and the attention output, T (hq + 2 hkv + hq) e, and
        with naive attention the G q s scores; with MLA ``mla.live``) or the FFN (R (up + ffn)
        e, and the router's logits T E e with experts, a shared expert's T (up + ffn) e)."""
        t, e = step.tokens, step.e
        q, s, count = self._attention_shape(step)
        attention = (mla.live(self, step) if self.mla
                     else t * (2 * self.hq + 2 * self.hkv) * e)
        if self.attention == "naive":
            attention += count * q * s * e
        rows = self._ffn_rows(step)
        ffn = rows * (self.up_width + self.ffn) * e + (t * self.experts * e if self.experts
                                                       else 0)
        ffn += t * (self.shared_up + self.shared_ffn) * e  # the shared expert's, beside them
        return t * self.hidden * e + max(attention, ffn)

    # -- forward ------------------------------------------------------------------------------

    def forward(self, step: Step) -> list[Item]:
        before, core, after = self._forward_parts(step)
        return before + core + after

    def _forward_parts(self, step: Step) -> tuple[list[Item], list[Item], list[Item]]:
        """The forward pass in three, in order: what precedes the attention core (norm1, the
        QKV projection, the q/k norm, the rotary embedding, the KV-cache write), the core
        (``_attention_forward``: naive attention's scores, softmax, its dropout and context;
        flash's one kernel) and what follows it (the output projection to the last residual
        add): ``forward`` joined, ``recomputed`` told apart."""
        t = step.tokens
        before: list[Item] = [self._op("forward", self.norm, t * self.hidden, step)]
        if self.mla:
            before += mla.projections(self, step)
        else:
            before += self._proj_forward("qkv", self.hq + 2 * self.hkv, self.hidden, step,
                                         self.bias != "none")
            if self.qk_norm:
                before.append(self._op("forward", self.norm, t * (self.hq + self.hkv), step,
                                       "attn"))
            if self.rotary:
                before.append(self._op("forward", "rotary", t * (self.hq + self.hkv), step,
                                       "attn"))
            before += self._kv_cache_write(step)
        after = mla.after_attention(self, step) if self.mla else []
        after += self._proj_forward("proj", self.hidden, self._proj_in, step,
                                    self.bias == "all")
        after += self._dropout("forward", t * self.hidden, step)
        after += [self._op("forward", "residual", t * self.hidden, step),
                  self._op("forward", self.norm, t * self.hidden, step)]
        after += self._moe_forward(step) if self.experts else self._ffn_forward(step)
        after += self._dropout("forward", t * self.hidden, step)
        after.append(self._op("forward", "residual", t * self.hidden, step))
        return before, self._attention_forward(step), after

    def recomputed(self, step: Step, recompute: str) -> tuple[bool, ...]:
        """Training: which of ``forward(step)``'s items the backward pass runs again, a flag
        per item, the time that ``saved_bytes``'s tensors not kept cost:

        - ``full``: every item, the block's whole forward (its GEMMs and ops) from the input it
          keeps, once more before its backward (Megatron-LM's full, uniform recomputation;
          Narayanan et al., SC21, sec. 5.1, eq. 3, 96 B s l h^2 (1 + s / (6 h) + V / (16 l h))
          FLOPs an iteration with it: the blocks' 72 B s l h^2 (1 + s / (6 h)) forward and
          backward, their forward's 24 B s l h^2 (1 + s / (6 h)) again, a third more, and
          the output layer's 6 B s h V, not recomputed);
        - ``selective`` (Korthikanti et al. 2022, sec. 5): with naive attention the attention
          core, the scores GEMM, the softmax, its dropout and the context GEMM (the G q s
          tensors it does not keep; 4 B s^2 h FLOPs a block in its two GEMMs, kv_heads =
          heads); with flash attention nothing, the kernel's backward already recomputes the
          scores (``_flash``'s backward FLOPs, 10 G q s head_dim: five GEMMs, S = Q K^T among
          them) and keeps no s x s matrix;
        - ``none``, and every step outside training: nothing (())."""
        if recompute == "none" or step.phase != "train":
            return ()
        before, core, after = self._forward_parts(step)
        if recompute == "full":
            return (True,) * (len(before) + len(core) + len(after))
        again = recompute == "selective" and self.attention == "naive"
        return (False,) * len(before) + (again,) * len(core) + (False,) * len(after)

    def _proj_forward(self, part: str, out: int, inp: int, step: Step, bias: bool) -> list[Item]:
        items: list[Item] = [GemmShape(f"{self.name}.{part}", "forward", step.tokens, out, inp,
                                       (step.row_role, f"{part}.out", f"{part}.in"),
                                       (step.per_sample, 0, 0), b_operand="weight")]
        if bias:
            items.append(self._op("forward", "bias", step.tokens * out, step, part)
                         ._replace(follows="linear"))
        return items

    def _attention_forward(self, step: Step) -> list[Item]:
        q, s, count = self._attention_shape(step)
        if self.attention == "flash":
            return [self._flash(step, "forward")]
        qk, v, _ = self._dims(step)
        qs, (qq, kk), (qv, vv) = self._attention_tensors(step)
        items: list[Item] = [
            GemmShape(f"{self.name}.scores", "forward", q, s, qk,
                      ("query", "key", "head_dim"), (0, 0, 0), count, (1, 1, 1),
                      self._shared_kv(step, (qq, kk, qs)), self._cache(step)),
            self._op("forward", "softmax", count * q * s, step, "attn")]
        items += self._dropout("forward", count * q * s, step, "attn")
        items.append(GemmShape(f"{self.name}.context", "forward", q, v, s,
                               ("query", "head_dim", "key"), (0, 0, 0), count, (1, 1, 1),
                               self._shared_kv(step, (qs, vv, qv)), self._cache(step),
                               rows=(2, 1, 1)))  # O = P.V: V's rows run along head_dim (N)
        return items

    def _kv_cache_write(self, step: Step) -> list[Item]:
        """Inference with a KV cache (``kv_cache_bytes``): the step's new K and V copied into
        it, read at the activations' size and written at the cache's (2 FLOPs an element to
        quantize into a narrower cache, as reading it back costs 2 to dequantize). Every new
        token's, also past a sliding window: a cyclic cache overwrites its oldest slot with
        each token (TensorRT-LLM's), so a prefill longer than the window writes more than the
        cache keeps."""
        if not self.kv_cache_bytes(step):
            return []
        elements = step.tokens * self._cache_width
        flops = 2 * elements if step.kv_e != step.e else 0
        return [OpShape(f"{self.name}.attn", "forward", "kv-cache-write", flops,
                        elements * (step.e + step.kv_e))]

    @staticmethod
    def _cache(step: Step) -> str:
        """In decode, naive attention's B (K, then V) is read from the KV cache."""
        return "kv" if step.phase == "decode" else ""

    def _dims(self, step: Step) -> tuple[int, int, int]:
        """The attention's query/key head dim, value head dim and the K/V heads it reads:
        (head_dim, head_dim, kv_heads), or with MLA ``mla.dims`` (nope + rope, v_head_dim,
        heads; in decode, absorbed, kv_lora_rank + rope, kv_lora_rank, 1)."""
        return mla.dims(self, step) if self.mla else (self.head_dim, self.head_dim,
                                                      self.kv_heads)

    def _attention_tensors(self, step: Step) -> tuple[int, tuple[int, int], tuple[int, int]]:
        """Elements of a q x s score matrix (G q s); of the q query rows and of K, at the
        query/key head dim (G q qk, Gkv s qk: the K/V heads the query heads share); of the
        output rows and of V, at the value head dim (G q v, Gkv s v)."""
        q, s, count = self._attention_shape(step)
        qk, v, groups = self._dims(step)
        kv = step.batch * groups * s
        return count * q * s, (count * q * qk, kv * qk), (count * q * v, kv * v)

    def _shared_kv(self, step: Step, tensors: tuple[int, int, int]) -> tuple[int, int, int] | None:
        """``tensors`` when query heads share K and V (grouped-query attention, and MLA's
        absorbed decode: K and V are read once per KV head, not once per query head); None (the
        matrices) otherwise."""
        return tensors if self._dims(step)[2] < self.heads else None

    def _attention_shape(self, step: Step) -> tuple[int, int, int]:
        """(query rows, key length, batched count) of the attention GEMMs."""
        seq = step.seq or 1
        q = 1 if step.phase == "decode" else seq
        return q, seq, step.batch * self.heads

    def _flash(self, step: Step, pass_: str) -> OpShape:
        """FlashAttention as one fused kernel: compulsory traffic, no s x s matrix in memory."""
        q, s, count = self._attention_shape(step)
        decode = step.phase == "decode"
        keys = self._kept(s) if decode else s  # decode: the one query reads the window's keys
        forward = pass_ == "forward"
        qk, v, groups = self._dims(step)
        pairs = count * self._pairs(q, keys)
        # forward: S = Q K^T, O = P V; backward: S again, dP = dO V^T, dV = P^T dO, dQ = dS K,
        # dK = dS^T Q (qk = v = head_dim: 4 and 10 G q s head_dim)
        flops = int(2 * pairs * (qk + v) if forward else 2 * pairs * (3 * qk + 2 * v))
        rows_q, rows_kv = step.batch * q, step.batch * keys
        q_o = rows_q * self.heads * (qk + v)  # Q (or dQ, dO) and O at their head dims
        k_v = rows_kv * groups * (qk + v)
        if self.mla and decode:  # the cached latent is both K and V, read once (``mla``)
            k_v = rows_kv * mla.cache_width(self)
        if forward:  # read Q, K, V; write O (and the log-sum-exp when training)
            nbytes = q_o * step.e + k_v * (step.kv_e if decode else step.e)
            lse = count * q * LSE_BYTES if step.phase == "train" else 0
            if decode and step.kv_e != step.e:  # K, V from a narrower cache, dequantized:
                flops += 2 * k_v  # 2 FLOPs per element
        else:  # read Q, O, dO, K, V, LSE; write dQ, dK, dV
            nbytes = (2 * q_o + 2 * k_v) * step.e
            lse = count * q * LSE_BYTES
        kind = "flash-attention" if forward else "flash-attention-backward"
        shape = AttentionShape(qk, q, keys, self.causal and not decode)
        return OpShape(f"{self.name}.attn", pass_, kind, flops, nbytes + lse, shape)

    def _pairs(self, q: int, s: int) -> float:
        """(query, key) pairs flash attention computes for ``q`` queries over ``s`` keys: q s,
        halved when causal (q = s), s w - w^2 / 2 with a window w shorter than s (module
        docstring)."""
        if not (self.causal and q > 1):
            return q * s
        w = self.active_window
        return s * w - w * w / 2 if w and s > w else q * s / 2

    def _ffn_forward(self, step: Step) -> list[Item]:
        t = step.tokens
        items = self._proj_forward("ffn_up", self.up_width, self.hidden, step, self.bias == "all")
        items += self._activation("forward", t * self.ffn, step, "ffn")
        items += self._proj_forward("ffn_down", self.hidden, self.ffn, step, self.bias == "all")
        return items

    def _activation(self, pass_: str, elements: int, step: Step, part: str) -> list[Item]:
        suffix = "" if pass_ == "forward" else "-backward"
        if self.gated:
            return [self._op(pass_, "silu" + suffix, elements, step, part),
                    self._op(pass_, "gate" + suffix, elements, step, part)]
        return [self._op(pass_, "gelu" + suffix, elements, step, part)]

    def _expert_rows(self, step: Step) -> tuple[int, int, float]:
        """Tokens each expert that gets any receives, how many experts get tokens, and the
        tokens' factor of the batch. Routing spreads the T k routed rows evenly: over all E
        experts, ceil(T k / E) each, when T k >= E; else over T k experts of one row each (a
        decode step at batch 1 runs top_k experts, and reads only their weights). On one GPU of
        an expert-parallel group of ep, E / ep local experts receive the ep T k rows the group
        routes to them: T k / (E / ep) each, the same formula over ``local_experts``."""
        routed, local = step.tokens * self.top_k, self.local_experts
        active = min(local, routed)
        return (math.ceil(routed / active), active, step.per_sample * self.top_k / local)

    def experts_reached(self, step: Step) -> tuple[int, float] | None:
        """(the local experts a step runs, ``_expert_rows``: the routed rows spread evenly, the
        most it can reach; the mean it would reach were each token's top_k experts drawn
        uniformly and independently), None without experts. The mean: an expert misses a token
        with probability 1 - k / E, so ``local (1 - (1 - k / E)^T)`` over the T tokens the
        expert-parallel group routes (T x ``expert_shards``); Mixtral at T = 4: 8 (1 - 0.75^4)
        = 5.47 of the 8 the even spread reaches."""
        if not self.experts:
            return None
        _, active, _ = self._expert_rows(step)
        tokens = step.tokens * self.expert_shards
        miss = (1 - self.top_k / self.experts) ** tokens
        return active, self.local_experts * (1 - miss)

    def _moe_forward(self, step: Step) -> list[Item]:
        t, (rows, active, f) = step.tokens, self._expert_rows(step)
        routed = t * self.top_k
        return [
            GemmShape(f"{self.name}.router", "forward", t, self.experts, self.hidden,
                      (step.row_role, "experts", "hidden"), (step.per_sample, 0, 0),
                      b_operand=self._router_operand),
            self._op("forward", "softmax", t * self.experts, step, "router"),
            GemmShape(f"{self.name}.expert_up", "forward", rows, self.up_width, self.hidden,
                      ("expert tokens", "ffn_up.out", "hidden"), (f, 0, 0), active,
                      b_operand="weight"),
            *self._activation("forward", routed * self.ffn, step, "experts"),
            GemmShape(f"{self.name}.expert_down", "forward", rows, self.hidden, self.ffn,
                      ("expert tokens", "hidden", "ffn"), (f, 0, 0), active,
                      b_operand="weight"),
            self._op("forward", "gate", routed * self.hidden, step, "combine"),
            *self._shared_forward(step)]

    def _shared_forward(self, step: Step) -> list[Item]:
        """The shared expert (``shared_ffn``): every token's gated FFN beside the routed
        experts, its output added to theirs (op ``residual`` on the block's ``shared``)."""
        if not self.shared_ffn:
            return []
        t, bias = step.tokens, self.bias == "all"
        items = self._proj_forward("shared_up", self.shared_up, self.hidden, step, bias)
        items += self._activation("forward", t * self.shared_ffn, step, "shared")
        items += self._proj_forward("shared_down", self.hidden, self.shared_ffn, step, bias)
        items.append(self._op("forward", "residual", t * self.hidden, step, "shared"))
        return items

    def _shared_backward(self, step: Step) -> list[Item]:
        """The shared expert's backward: its add's (``residual-backward``), its projections'
        and its activation's, in reverse."""
        if not self.shared_ffn:
            return []
        t, bias = step.tokens, self.bias == "all"
        items: list[Item] = [self._op("backward", "residual-backward", t * self.hidden, step,
                                      "shared")]
        items += self._proj_backward("shared_down", self.hidden, self.shared_ffn, step, bias)
        items += self._activation("backward", t * self.shared_ffn, step, "shared")
        items += self._proj_backward("shared_up", self.shared_up, self.hidden, step, bias)
        return items

    # -- backward -----------------------------------------------------------------------------

    def backward(self, step: Step, data_grad: bool) -> list[Item]:
        t = step.tokens
        items: list[Item] = [self._op("backward", "residual-backward", t * self.hidden, step)]
        items += self._dropout("backward", t * self.hidden, step)
        items += self._moe_backward(step) if self.experts else self._ffn_backward(step)
        items.append(self._op("backward", f"{self.norm}-backward", t * self.hidden, step))
        items.append(self._op("backward", "residual-backward", t * self.hidden, step))
        items += self._dropout("backward", t * self.hidden, step)
        items += self._proj_backward("proj", self.hidden, self._proj_in, step,
                                     self.bias == "all")
        items += self._attention_backward(step)
        if self.mla:
            items += mla.backward(self, step, data_grad)
            items.append(self._op("backward", f"{self.norm}-backward", t * self.hidden, step))
            return items
        if self.rotary:
            items.append(self._op("backward", "rotary-backward", t * (self.hq + self.hkv), step,
                                  "attn"))
        if self.qk_norm:
            items.append(self._op("backward", f"{self.norm}-backward", t * (self.hq + self.hkv),
                                  step, "attn"))
        items += self._proj_backward("qkv", self.hq + 2 * self.hkv, self.hidden, step,
                                     self.bias != "none", data_grad)
        items.append(self._op("backward", f"{self.norm}-backward", t * self.hidden, step))
        return items

    def _proj_backward(self, part: str, out: int, inp: int, step: Step, bias: bool,
                       data_grad: bool = True) -> list[Item]:
        t, f, role, layer = step.tokens, step.per_sample, step.row_role, f"{self.name}.{part}"
        items: list[Item] = []
        if bias:
            items.append(self._op("backward", "bias-backward", t * out, step, part)
                         ._replace(follows="linear", summed=SumShape(t, out)))
        if data_grad:
            items.append(GemmShape(layer, "backward-data", t, inp, out,
                                   (role, f"{part}.in", f"{part}.out"), (f, 0, 0),
                                   b_operand="weight"))
        items.append(GemmShape(layer, "backward-weight", inp, out, t,
                               (f"{part}.in", f"{part}.out", role), (0, 0, f)))
        return items

    def _attention_backward(self, step: Step) -> list[Item]:
        if self.attention == "flash":
            return [self._flash(step, "backward")]
        q, s, count = self._attention_shape(step)
        scores, context = f"{self.name}.scores", f"{self.name}.context"
        qk, v, _ = self._dims(step)
        qs, (qq, kk), (qv, vv) = self._attention_tensors(step)
        one = (1, 1, 1)
        # rows (the dimension each of A, B, C runs along in memory, Gemm.rows): dO, Q, K, V and
        # their gradients run along head_dim, P and dS along the keys; a transposed operand
        # (V^T, P^T, dS^T) runs along its other dimension
        items: list[Item] = [
            GemmShape(context, "backward-data", q, s, v, ("query", "key", "head_dim"),
                      (0, 0, 0), count, one, self._shared_kv(step, (qv, vv, qs)),
                      rows=(2, 2, 1)),  # dP = dO.V^T
            GemmShape(context, "backward-data", s, v, q, ("key", "head_dim", "query"),
                      (0, 0, 0), count, one, self._shared_kv(step, (qs, qv, vv)),
                      rows=(0, 1, 1))]  # dV = P^T.dO
        items += self._dropout("backward", count * q * s, step, "attn")
        items.append(self._op("backward", "softmax-backward", count * q * s, step, "attn"))
        items += [
            GemmShape(scores, "backward-data", q, qk, s, ("query", "head_dim", "key"),
                      (0, 0, 0), count, one, self._shared_kv(step, (qs, kk, qq)),
                      rows=(2, 1, 1)),  # dQ = dS.K
            GemmShape(scores, "backward-data", s, qk, q, ("key", "head_dim", "query"),
                      (0, 0, 0), count, one, self._shared_kv(step, (qs, qq, kk)),
                      rows=(0, 1, 1))]  # dK = dS^T.Q
        return items

    def _ffn_backward(self, step: Step) -> list[Item]:
        t, bias = step.tokens, self.bias == "all"
        items = self._proj_backward("ffn_down", self.hidden, self.ffn, step, bias)
        items += self._activation("backward", t * self.ffn, step, "ffn")
        items += self._proj_backward("ffn_up", self.up_width, self.hidden, step, bias)
        return items

    def _moe_backward(self, step: Step) -> list[Item]:
        t, (rows, active, f) = step.tokens, self._expert_rows(step)
        routed, role = t * self.top_k, step.row_role
        up, down = f"{self.name}.expert_up", f"{self.name}.expert_down"
        router = f"{self.name}.router"
        return [
            *self._shared_backward(step),
            self._op("backward", "gate-backward", routed * self.hidden, step, "combine"),
            GemmShape(down, "backward-data", rows, self.ffn, self.hidden,
                      ("expert tokens", "ffn", "hidden"), (f, 0, 0), active,
                      b_operand="weight"),
            GemmShape(down, "backward-weight", self.ffn, self.hidden, rows,
                      ("ffn", "hidden", "expert tokens"), (0, 0, f), active),
            *self._activation("backward", routed * self.ffn, step, "experts"),
            GemmShape(up, "backward-data", rows, self.hidden, self.up_width,
                      ("expert tokens", "hidden", "ffn_up.out"), (f, 0, 0), active,
                      b_operand="weight"),
            GemmShape(up, "backward-weight", self.hidden, self.up_width, rows,
                      ("hidden", "ffn_up.out", "expert tokens"), (0, 0, f), active),
            self._op("backward", "softmax-backward", t * self.experts, step, "router"),
            GemmShape(router, "backward-data", t, self.hidden, self.experts,
                      (role, "hidden", "experts"), (step.per_sample, 0, 0),
                      b_operand=self._router_operand),
            GemmShape(router, "backward-weight", self.hidden, self.experts, t,
                      ("hidden", "experts", role), (0, 0, step.per_sample))]

    # -- ops ----------------------------------------------------------------------------------

    def _op(self, pass_: str, kind: str, elements: int, step: Step, part: str = "") -> OpShape:
        layer = f"{self.name}.{part}" if part else self.name
        return elementwise(layer, pass_, kind, elements, step.e)

    def _dropout(self, pass_: str, elements: int, step: Step, part: str = "") -> list[Item]:
        if not self.dropout or step.phase != "train":
            return []
        kind = "dropout" if pass_ == "forward" else "dropout-backward"
        return [self._op(pass_, kind, elements, step, part)]


def _top_k(fields: Fields, experts: int) -> int:
    if not experts:
        if fields.has("top_k"):
            raise fields.fail("top_k", "top_k needs experts")
        return 0
    top_k = fields.positive_int("top_k", 2)
    if top_k > experts:
        raise fields.fail("top_k", f"expected at most experts ({experts}), got {top_k}")
    return top_k


def _dropout(fields: Fields) -> float:
    value = fields.get("dropout", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise fields.fail("dropout", f"expected a probability in [0, 1), got {value!r}")
    return float(value)
