"""nn.MultiheadAttention captured as torch runs it: the attention torch calls inside it as one
fused op. Worked by hand in fp16 (2 B a value): embed 256, 4 heads of 64, batch 8, 128
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
