"""What roofline.torch.capture counts around a fused attention: given a mask (``attn_mask``), the
mask torch's kernel reads, forward and backward, and, where the mask needs a gradient (T5's
learned relative position bias), that gradient and everything that flows from it; and the copy
the model's code makes of its output, which depends on how torch's kernel lays that output out.
Worked out by hand from the shapes, never from the code's own output.

torch's ``scaled_dot_product_attention`` converts a boolean mask into an additive one in Q's
dtype first (aten/src/ATen/native/transformers/attention.cpp, ``convert_boolean_attn_mask``:
one ``where``); FlashAttention takes no mask, so torch runs a masked attention with its
memory-efficient kernel, which reads the bias forward and again backward (it recomputes the
scores) and, when the bias requires grad, writes its gradient at the scores' shape B x H x Sq x Sk
(cuda/attention_backward.cu, ``_efficient_attention_backward``: ``grad_bias``), which autograd
then sums to the mask's own shape.

FlashAttention (and cuDNN's attention) allocate the output like Q (cuda/flash_attn/flash_api.cpp,
``mha_fwd``: ``out = at::empty_like(q_padded)``; cudnn/MHA.cpp, ``alloc_with_matching_layout``);
the memory-efficient kernel always B x S x H x D (cuda/attention.cu,
``_efficient_attention_forward``). A Hugging Face attention then runs
``out.transpose(1, 2).contiguous()``: a copy only where the output is B x H x S x D in memory.

Needs torch (the `torch` extra; .ci/run installs it); the T5 test transformers (the `hf` extra)."""

from __future__ import annotations

import os

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roofline.torch import capture  # noqa: E402

B, H, S, D = 2, 4, 64, 32
QKV = B * H * S * D  # 16,384 values each of Q, K, V and O
SCORES = B * H * S * S  # 32,768 scores


class Biased(torch.nn.Module):
    """Attention over its inputs with a learned additive bias, one per head, broadcast along the
    batch (T5's relative position bias, 1 x H x S x S)."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(1, H, S, S))

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)


class Windowed(torch.nn.Module):
    """Attention with a boolean mask of one S x S window broadcast along the batch, as Hugging
    Face passes a sliding window (B x 1 x S x S, stride 0 along the batch)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.ones(1, 1, S, S, dtype=torch.bool))

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v,
                                              attn_mask=self.window.expand(B, 1, S, S))


def _inputs():
    return tuple(torch.zeros(B, H, S, D) for _ in range(3))


def _by_kind(net):
    return {(o.kind, o.pass_): o for o in net.ops()}


def test_a_learned_bias_is_read_both_ways_and_gets_its_gradient():
    net = capture(Biased(), *_inputs(), mode="train")
    ops = _by_kind(net)
    lse = B * H * S * 4  # one fp32 log-sum-exp per query row: 2,048 B
    bias = H * S * S * 4  # the bias's own 16,384 values (it is broadcast along the batch)
    # forward: Q, K, V read and O written (4 x 16,384 x 4 B = 262,144), the LSE written, the
    # bias read once: 329,728 B (without the bias 264,192)
    assert ops["flash-attention", "forward"].bytes == 4 * QKV * 4 + lse + bias == 329_728
    # backward: Q, K, V, O, dO read and dQ, dK, dV written (8 x 16,384 x 4 B = 524,288), the
    # LSE read, the bias read again, its gradient written at the scores' shape (32,768 x 4 B):
    # 722,944 B (without the bias 526,336)
    assert (ops["flash-attention-backward", "backward"].bytes
            == 8 * QKV * 4 + lse + bias + SCORES * 4 == 722_944)
    # that gradient summed over the batch to the bias's shape: 32,768 read, 16,384 written
    # (4 B each), an add a value read
    grad_sum = ops["aten.sum", "backward"]
    assert (grad_sum.bytes, grad_sum.flops) == ((SCORES + H * S * S) * 4, SCORES) \
        == (196_608, 32_768)
    assert net.uncosted == ()


def test_a_boolean_mask_is_converted_then_read_at_its_stored_size():
    net = capture(Windowed(), *_inputs(), mode="inference")
    ops = _by_kind(net)
    # torch's conversion: the boolean mask read (a byte for each of the 2 x 64 x 64 = 8,192
    # values it is broadcast to), its two fp32 scalars (0 and -inf, 4 B each), the fp32 mask
    # written (8,192 x 4 B)
    assert ops["aten.where", "forward"].bytes == 8_192 + 2 * 4 + 8_192 * 4 == 40_968
    # the attention: Q, K, V read, O written (262,144 B), the converted mask's 8,192 values
    # read (32,768 B; it is broadcast along the 4 heads); no LSE in inference
    assert ops["flash-attention", "forward"].bytes == 4 * QKV * 4 + 8_192 * 4 == 294_912


def test_a_t5_position_bias_gets_its_gradient():
    need("transformers", extra="hf")
    import transformers

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    config = transformers.T5Config(vocab_size=1000, d_model=128, d_kv=32, d_ff=256,
                                   num_layers=2, num_heads=H, decoder_start_token_id=0,
                                   pad_token_id=0)
    with torch.device("meta"):
        model = transformers.T5ForConditionalGeneration(config)

    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, labels):
            return self.model(input_ids=ids, labels=labels).loss

    ids = torch.zeros(B, S, dtype=torch.long)
    net = capture(Loss(), ids, ids, mode="train")
    # the encoder's and the decoder's relative position bias (32 buckets x 4 heads): each
    # gathered forward into a 1 x 4 x 64 x 64 bias and given its gradient backward
    grads = [o for o in net.ops() if o.kind == "aten.embedding_dense_backward"
             and o.layer.endswith("relative_attention_bias")]
    assert len(grads) == 2


class Heads(torch.nn.Module):
    """Attention as a Hugging Face model runs it, from Q, K, V of B x S x (H D) (``from_qkv``:
    GPT-2's, views of one B x S x 3 (H D) projection) or of B x H x S x D, its output
    transposed back to B x S x H x D and made contiguous."""

    def __init__(self, from_qkv, masked=False):
        super().__init__()
        self.from_qkv, self.masked = from_qkv, masked
        self.register_buffer("window", torch.ones(S, S, dtype=torch.bool))

    def forward(self, *x):
        if self.from_qkv:
            q, k, v = (t.view(B, S, H, D).transpose(1, 2) for t in x[0].split(H * D, dim=2))
        else:
            q, k, v = x
        mask = self.window if self.masked else None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=not self.masked)
        return out.transpose(1, 2).contiguous()


def _kinds(net):
    return [(o.kind, o.bytes) for o in net.ops() if o.kind != "aten.where"]


def test_an_output_laid_out_like_a_strided_q_is_not_copied():
    # GPT-2: Q a view of the B x S x 3 (H D) projection, so the kernel's output is B x S x H x D
    # in memory and .transpose(1, 2).contiguous() is that tensor: the attention alone, its Q, K,
    # V read and O written (262,144 B). A contiguous B x H x S x D output, as counted before,
    # was copied: 2 x 16,384 x 4 B more
    net = capture(Heads(from_qkv=True), torch.zeros(B, S, 3 * H * D), mode="inference")
    assert _kinds(net) == [("flash-attention", 4 * QKV * 4)]


def test_an_output_laid_out_like_a_contiguous_q_is_copied():
    # Q, K, V of B x H x S x D: the output too, so the transpose is made contiguous by a copy,
    # 16,384 values read and written (131,072 B), a permuted one
    net = capture(Heads(from_qkv=False), *_inputs(), mode="inference")
    assert _kinds(net) == [("flash-attention", 4 * QKV * 4), ("aten.clone", 2 * QKV * 4)]
    assert [o.strided for o in net.ops() if o.kind == "aten.clone"] == [True]


def test_a_masked_attentions_output_is_laid_out_b_s_h_d_and_not_copied():
    # a mask: the memory-efficient kernel, whose output is B x S x H x D whatever Q: no copy;
    # the attention reads the boolean mask's conversion, 64 x 64 fp32 values (16,384 B)
    net = capture(Heads(from_qkv=False, masked=True), *_inputs(), mode="inference")
    assert _kinds(net) == [("flash-attention", 4 * QKV * 4 + S * S * 4)]


def test_dropout_in_the_attention_is_marked_for_its_per_score_work():
    """``dropout_p`` > 0 (a Hugging Face model's attention in training): the fused op says so,
    forward and backward, and the GPU prices the per-score work it adds (analysis/gpu_ops)."""

    class Dropped(torch.nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p, self.w = p, torch.nn.Parameter(torch.ones(D))

        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q * self.w, k, v, dropout_p=self.p)

    qkv = [torch.zeros(B, H, S, D) for _ in range(3)]
    for p in (0.1, 0.0):
        net = capture(Dropped(p), *qkv, mode="train")
        shapes = [o.attention for o in net.ops() if o.kind.startswith("flash-attention")]
        assert len(shapes) == 2 and all(a.dropout == (p > 0) and not a.masked for a in shapes)


def test_a_mask_that_needs_its_gradient_is_marked_for_the_memory_efficient_kernel():
    """Training, T5's learned bias needs its gradient, which only torch's memory-efficient
    kernel gives (analysis/gpu_ops prices it at that kernel's rate); in inference nothing needs
    a gradient, and a boolean window never does."""
    def shapes(module, mode):
        return [o.attention for o in capture(module, *_inputs(), mode=mode).ops()
                if o.kind.startswith("flash-attention")]

    assert [a.mask_grad for a in shapes(Biased(), "train")] == [True, True]
    assert [a.mask_grad for a in shapes(Biased(), "inference")] == [False]
    assert all(a.masked and not a.mask_grad for a in shapes(Windowed(), "inference"))


class Latent(torch.nn.Module):
    """Attention whose V is narrower than Q and K (DeepSeek's multi-head latent attention:
    Q and K heads of 192, V of 128), here 8 and 2."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(1))  # a trainable step's one parameter

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q * self.scale, k, v)


def test_a_v_narrower_than_q_counts_its_own_head_dim():
    """q, k: 1 x 1 x 4 x 8, v: 1 x 1 x 4 x 2 (fp32). Forward: S = Q K^T, 2 x 4 x 4 x 8 = 256
    FLOPs, O = P V, 2 x 4 x 4 x 2 = 64: 320 (counted at Q's head dim, 512); Q 32, K 32, V 8
    values read, O 8 written (O is V's width, not Q's): 80 values, 320 B (was 416). Backward:
    S again, dQ = dS K and dK = dS^T Q over 8 (3 x 256 = 768), dP = dO V^T and dV = P^T dO over
    2 (2 x 64 = 128): 896 FLOPs (was 10 x 128 = 1,280); Q, K, V, O, dO read and dQ, dK, dV
    written: 2 x 80 = 160 values, 640 B, and the 4 query rows' fp32 log-sum-exp, 16 B."""
    q, k, v = torch.zeros(1, 1, 4, 8), torch.zeros(1, 1, 4, 8), torch.zeros(1, 1, 4, 2)
    ops = _by_kind(capture(Latent(), q, k, v, mode="inference"))
    forward = ops["flash-attention", "forward"]
    assert (forward.flops, forward.bytes) == (320, 320)
    ops = _by_kind(capture(Latent(), q, k, v, mode="train"))
    backward = ops["flash-attention-backward", "backward"]
    assert (backward.flops, backward.bytes) == (896, 640 + 16)
