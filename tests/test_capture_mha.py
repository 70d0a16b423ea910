"""nn.MultiheadAttention captured as torch runs it: the attention torch calls inside it as one
fused op, and the batched GEMMs torch.matmul runs on its transposed input reading their shared
weight once. Worked by hand in fp16 (2 B a value): embed 256, 4 heads of 64, batch 8, 128
tokens."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from roofline.model.capture import CaptureError  # noqa: E402
from roofline.torch import capture  # noqa: E402

F = torch.nn.functional


class TinyTF(torch.nn.Module):
    """Self-attention (batch_first) then a Linear, on (batch, tokens, 256)."""

    def __init__(self, need_weights: bool = False) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(256, 4, batch_first=True)
        self.fc = torch.nn.Linear(256, 256)
        self.need_weights = need_weights

    def forward(self, x):
        return self.fc(self.attn(x, x, x, need_weights=self.need_weights)[0])


def _shapes(net):
    return [(g.layer, g.pass_, g.batch_count, g.m, g.n, g.k, g.bytes) for g in net.gemms()]


def test_multihead_attention_calls_attention_torch_runs_fused():
    """With need_weights=False torch's multi_head_attention_forward calls
    scaled_dot_product_attention (a fused kernel on a GPU), from inside a torch function the
    function mode does not see into: one flash-attention op all the same, as a direct call
    gives. B H = 8 x 4 = 32 heads of Sq = Sk = 128, D = 64: 4 x 32 x 128 x 128 x 64 =
    134,217,728 FLOPs; Q, K, V read and O written, 4 x 32 x 128 x 64 values, 2,097,152 B."""
    net = capture(TinyTF(), torch.zeros(8, 128, 256), mode="inference", dtype="fp16")
    (op,) = [o for o in net.ops() if o.kind.startswith("flash")]
    assert (op.layer, op.kind, op.flops, op.bytes) == (
        "attn", "flash-attention", 134_217_728, 2_097_152)
    # no attention GEMM left: the input projection, the output projection and fc
    assert [(g.layer, g.n, g.k) for g in net.gemms()] == [
        ("attn", 768, 256), ("attn", 256, 256), ("fc", 256, 256)]
    # training: its backward too, 10/4 of the forward's FLOPs; the forward also writes one fp32
    # log-sum-exp a query row, 32 x 128 x 4 B = 16,384 B, which the backward reads
    net = capture(TinyTF(), torch.zeros(8, 128, 256), mode="train", dtype="fp16")
    ops = {o.kind: o for o in net.ops() if o.kind.startswith("flash")}
    assert ops["flash-attention"].bytes == 2_097_152 + 16_384
    assert ops["flash-attention-backward"].flops == 10 * 134_217_728 // 4 == 335_544_320
    assert ops["flash-attention-backward"].layer == "attn"


def test_multihead_attention_that_returns_its_weights_is_unfused_as_torch_runs_it():
    """need_weights=True (nn.MultiheadAttention's default) makes torch compute the scores itself,
    bmm, softmax, bmm, to return them: two batched GEMMs of 32 heads, S = Q K^T (128 x 128 x
    64) and O = P V (128 x 64 x 128), no fused op; attention="naive" unfuses the other too."""
    for need_weights, attention in ((True, "flash"), (False, "naive")):
        net = capture(TinyTF(need_weights), torch.zeros(8, 128, 256), mode="inference",
                      dtype="fp16", attention=attention)
        assert not [o for o in net.ops() if o.kind.startswith("flash")]
        assert [(g.batch_count, g.m, g.n, g.k) for g in net.gemms() if g.batch_count == 32] == [
            (32, 128, 128, 64), (32, 128, 64, 128)]


def test_torchs_attention_is_given_back_after_a_capture_even_a_failed_one():
    sdpa = torch._C._nn.scaled_dot_product_attention

    class Fails(torch.nn.Module):
        def forward(self, x):
            return F.scaled_dot_product_attention(x, x, x).tolist()

    capture(TinyTF(), torch.zeros(2, 16, 256), mode="inference")
    assert F.scaled_dot_product_attention is sdpa
    with pytest.raises(CaptureError):
        capture(Fails(), torch.zeros(2, 4, 16, 64), mode="inference")
    assert F.scaled_dot_product_attention is sdpa


def test_a_batched_gemm_reads_a_broadcast_operand_once():
    """bmm of A (128, 8, 256) and a weight W (256, 768) expanded to (128, 256, 768), a batch
    stride of 0: one matrix in memory, read once, not 128 times. Bytes 2 x (128 x 8 x 256 +
    256 x 768 + 128 x 8 x 768) = 2 x (262,144 + 196,608 + 786,432) = 2,490,368 (counted 128
    times, 2 x (262,144 + 128 x 196,608 + 786,432) = 52,428,800); the FLOPs, 2 x 128 x 8 x 768
    x 256 = 402,653,184, are the 128 products'. A broadcast A likewise: W (8, 256) expanded to
    (128, 8, 256) against B (128, 256, 768), 2 x (8 x 256 + 128 x 256 x 768 + 128 x 8 x 768) =
    51,908,608."""

    class Shared(torch.nn.Module):
        def __init__(self, a: bool) -> None:
            super().__init__()
            self.a = a
            self.w = torch.nn.Parameter(torch.zeros((8, 256) if a else (256, 768)))

        def forward(self, x):
            if self.a:
                return torch.bmm(self.w.expand(128, 8, 256), x)
            return torch.bmm(x, self.w.expand(128, 256, 768))

    (b,) = capture(Shared(False), torch.zeros(128, 8, 256), mode="inference",
                   dtype="fp16").gemms()
    assert (b.batch_count, b.m, b.n, b.k, b.b_operand) == (128, 8, 768, 256, "weight")
    assert b.tensors == (262_144, 196_608, 786_432)
    assert b.bytes == 2_490_368 and b.flops == 402_653_184
    (a,) = capture(Shared(True), torch.zeros(128, 256, 768), mode="inference",
                   dtype="fp16").gemms()
    assert (a.batch_count, a.m, a.n, a.k) == (128, 8, 768, 256)
    assert a.bytes == 51_908_608
    # a B of its own in each product: the matrices themselves, 2 x 128 x (8 x 256 + 256 x 768 +
    # 8 x 768) = 52,428,800 B

    class Plain(torch.nn.Module):
        def forward(self, x, y):
            return torch.bmm(x, y)

    (plain,) = capture(Plain(), torch.zeros(128, 8, 256), torch.zeros(128, 256, 768),
                       mode="inference", dtype="fp16").gemms()
    assert plain.tensors is None and plain.bytes == 52_428_800


def test_multihead_attention_in_inference_reads_its_weights_once():
    """batch_first MHA runs on its input transposed to (128 tokens, 8, 256), a view torch.matmul
    cannot fold into one 2-D GEMM without a copy; training, it copies (the weight needs a
    gradient) and runs one 1024 x 768 x 256 GEMM, inference runs bmm over the 128 tokens with
    the weight expanded, 128 x (8 x 768 x 256). Either reads the weight once: 2 x (1024 x 256 +
    256 x 768 + 1024 x 768) = 2,490,368 B. The attention's output comes back transposed too,
    and fc runs 8 x (128 x 256 x 256) on it: 2 x (1024 x 256 + 256 x 256 + 1024 x 256) =
    1,179,648 B, a 1024 x 256 x 256 GEMM's."""
    inference = capture(TinyTF(), torch.zeros(8, 128, 256), mode="inference", dtype="fp16")
    assert _shapes(inference) == [("attn", "forward", 128, 8, 768, 256, 2_490_368),
                                  ("attn", "forward", 1, 1024, 256, 256, 1_179_648),
                                  ("fc", "forward", 8, 128, 256, 256, 1_179_648)]
    train = capture(TinyTF(), torch.zeros(8, 128, 256), mode="train", dtype="fp16")
    assert [s for s in _shapes(train) if s[1] == "forward"] == [
        ("attn", "forward", 1, 1024, 768, 256, 2_490_368),
        ("attn", "forward", 1, 1024, 256, 256, 1_179_648),
        ("fc", "forward", 1, 1024, 256, 256, 1_179_648)]
