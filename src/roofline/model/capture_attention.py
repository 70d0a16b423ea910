"""``scaled_dot_product_attention`` captured as one fused op, as FlashAttention runs it
(``_fused_attention``): its FLOPs and bytes forward and, through a custom autograd node,
backward; its ``attn_mask`` as the additive mask torch's kernel reads, and a mask that needs a
gradient given it (``_additive_mask``, ``_mask_gradient``); its output and gradients laid out
as torch's kernel allocates them (``_laid_out``); and seen wherever it is called from, inside
torch's own functions too (``_attention_seen``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .capture_recorder import _metadata, _Recorder
from .capture_tensors import _numel, _split, _stored
from .layers.captured import CapturedOp
from .layers.transformer import LSE_BYTES
from .ops import AttentionShape


@contextmanager
def _attention_seen(rec: _Recorder, mode: Any) -> Iterator[None]:
    """``F.scaled_dot_product_attention`` seen by the function ``mode`` wherever it is called
    from. The mode is off while it runs a torch function (``handle_torch_function`` pops it), so
    an attention that torch's own Python code calls from inside one would go unseen, run as the
    math fallback the meta device picks: ``F.multi_head_attention_forward`` (nn.MultiheadAttention
    with ``need_weights=False``, nn.TransformerEncoderLayer's) calls it by its module-level
    name. That name is replaced while inside (and given back after): called where the mode is
    off (``rec.handling``), it puts the mode back for the call, which the mode then sees as any
    other; called where the mode is on, the mode sees the call already."""
    import torch.nn.functional as F

    named = F.scaled_dot_product_attention  # torch's, or whatever replaced it

    def attention(*args: Any, **kwargs: Any) -> Any:
        if not rec.handling:
            return named(*args, **kwargs)
        with mode:
            return named(*args, **kwargs)

    F.scaled_dot_product_attention = attention
    try:
        yield
    finally:
        F.scaled_dot_product_attention = named


def _fused_attention(rec: _Recorder, owner: str, q: Any, k: Any, v: Any,
                     attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
                     scale: float | None = None, enable_gqa: bool = False) -> Any:
    """One fused attention op forward (and its backward, through a custom autograd node). An
    ``attn_mask`` is the additive mask torch's kernel reads (``_additive_mask``): its stored
    values read forward and again backward (the backward recomputes the scores) and, where it
    needs a gradient (T5's learned position bias), that gradient written at the scores' shape,
    B x H x Sq x Sk, then summed to the mask's own shape by autograd (``_mask_gradient``)."""
    import torch

    count = _numel(tuple(q.shape[:-2]))  # batch x heads
    sq, sk, d, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    causal = 0.5 if is_causal else 1.0
    # read Q, K, V; write O, of V's head dim (MLA's: Q and K 192, V 128)
    elements = q.numel() + k.numel() + v.numel() + count * sq * dv
    # S = Q K^T over d, O = P V over dv; the backward's five GEMMs: S again, dQ = dS K and
    # dK = dS^T Q over d, dP = dO V^T and dV = P^T dO over dv
    forward_flops = 2 * count * sq * sk * (d + dv) * causal
    backward_flops = 2 * count * sq * sk * (3 * d + 2 * dv) * causal
    # training, the forward writes one fp32 log-sum-exp per query row that the backward reads
    lse = count * sq * LSE_BYTES if rec.train else 0
    mask = _additive_mask(attn_mask, q)
    shape = AttentionShape(int(d), int(sq), int(sk), bool(is_causal), mask is not None,
                           dropout_p > 0, mask is not None and mask.requires_grad
                           and torch.is_grad_enabled())
    read = _split(mask, _stored(mask), rec)  # the mask's values, forward and backward

    masked = mask is not None or v.shape[-1] != d  # FlashAttention's cannot: the efficient one

    class Flash(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, q: Any, k: Any, v: Any, mask: Any) -> Any:
            out = _laid_out(q, v.shape[-1], masked)
            # what torch's kernels keep for the backward: Q, K, V, the output, the mask and the
            # fp32 log-sum-exp of each query row (capture_memory.py counts them while held)
            ctx.save_for_backward(q, k, v, out, mask)
            ctx.lse = q.new_empty((count, sq), dtype=torch.float32) if rec.train else None
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            # the tensors from ctx, not from the enclosing call: a closure over them would hold
            # Q, K, V past the forward until Python's cycle collector freed this class
            q, k, v, _, mask = ctx.saved_tensors
            wants = mask is not None and ctx.needs_input_grad[3]
            written = _split(mask, count * sq * sk if wants else 0, rec)
            rec.add(owner, True, CapturedOp(owner, "backward", "flash-attention-backward",
                                            int(backward_flops),
                                            2 * elements + read[0] + written[0],
                                            lse + read[1] + written[1], shape))
            return (_laid_out(q, d, masked), _laid_out(k, d, masked),
                    _laid_out(v, v.shape[-1], masked),
                    _mask_gradient(mask, (*q.shape[:-1], sk)) if wants else None)

    rec.add(owner, False, CapturedOp(owner, "forward", "flash-attention",
                                     int(forward_flops), elements + read[0],
                                     lse + read[1], shape))
    rec.quiet += 1
    try:
        out = Flash.apply(q, k, v, mask)
    finally:
        rec.quiet -= 1
    if out.grad_fn is not None:  # its backward's own ops (the mask gradient's sum) are its
        _metadata(out.grad_fn)["roofline_module"] = owner
    return out


def _laid_out(like: Any, width: int, efficient: bool) -> Any:
    """An attention output (``like`` Q, ``width`` V's head dim) or gradient (``like`` the input
    it is the gradient of) laid out in memory as torch's CUDA kernel allocates it, so that the
    copies the model's code makes of it (Hugging Face's ``.transpose(1, 2).contiguous()``) are
    the ones a device runs. FlashAttention (and cuDNN's) allocate it like Q, on the Q, K, V
    torch transposed to B x S x H x D (cuda/flash_attn/flash_api.cpp, ``mha_fwd``: ``out =
    at::empty_like(q_padded)``; ``mha_bwd``: ``dq = at::empty_like(q)``; cudnn/MHA.cpp,
    ``alloc_with_matching_layout``): dense in Q's dimension order (``empty_like``), so a Q
    viewed out of a B x S x H x D projection (GPT-2's) gives an output already B x S x H x D in
    memory, which ``.transpose(1, 2).contiguous()`` does not copy. The memory-efficient kernel
    (a mask, or V's head dim not Q's) always allocates B x S x H x D (cuda/attention.cu,
    ``_efficient_attention_forward``: ``at::empty({B, M, num_heads, Kv})``; its backward's
    ``grad_q`` alike). A tensor not of 4 dimensions: contiguous."""
    import torch

    shape = (*like.shape[:-1], width)
    if like.dim() != 4:
        return like.new_empty(shape)
    if efficient:
        b, h, s, _ = shape
        return like.new_empty((b, s, h, width)).transpose(1, 2)
    return torch.empty_like(like) if width == like.shape[-1] else like.new_empty(shape)


def _additive_mask(mask: Any, q: Any) -> Any:
    """The additive mask torch's attention kernel reads for ``attn_mask``: a boolean one is
    converted first, a kernel of its own, recorded as it runs (``where(mask, 0, -inf)`` in Q's
    dtype at the mask's shape: aten/src/ATen/native/transformers/attention.cpp,
    ``convert_boolean_attn_mask``, as ``scaled_dot_product_attention`` calls it before any
    backend); a floating-point one as given (Hugging Face's T5 position bias, its sliding-window
    and padding masks once converted); None without one. FlashAttention takes no mask: torch
    runs a masked attention with its memory-efficient kernel (cuda/attention.cu,
    ``_efficient_attention_forward``), which reads the bias tile by tile, broadcast along the
    heads (or batch) as given (``preprocess_mask`` expands it)."""
    import torch

    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.where(mask, 0.0, torch.scalar_tensor(float("-inf"), dtype=q.dtype,
                                                      device=mask.device))


def _mask_gradient(mask: Any, scores: tuple[int, ...]) -> Any:
    """An attention mask's gradient as torch's memory-efficient backward makes it: written at the
    scores' shape (``_efficient_attention_backward``: ``grad_bias`` of the expanded bias's
    sizes, cuda/attention_backward.cu), then summed to the mask's own shape (the broadcast's
    backward; recorded as that ``sum``)."""
    import torch

    full = torch.empty(scores, dtype=mask.dtype, device=mask.device)
    return full.sum_to_size(mask.shape) if tuple(mask.shape) != tuple(scores) else full
