"""A module that reads a value back (``.item()``, ``bool()``) captures where that value follows from
the example inputs it was given with values (roofline/model/capture_values.py), and takes the
branch it takes on them; where it does not follow, the capture fails as before, in one line.

Hugging Face's models, called as users call them (with the tokenizer's attention mask), ask
whether the mask pads any token: with none they attend with ``is_causal`` (causal pairs only),
with padding through a materialized mask over every pair. The attention op's FLOPs, by hand:
4 B H D S^2 / 2 causal, 4 B H D S^2 masked.

Needs torch (the `torch` extra); the GPT-2 test transformers (the `hf` extra)."""

from __future__ import annotations

import os

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.model.capture import CaptureError  # noqa: E402
from roofline.torch import capture  # noqa: E402

B, F_IN, F_OUT = 8, 64, 32


class Branching(torch.nn.Module):
    """One linear layer, then times 3 where ``flags`` holds a nonzero value."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(F_IN, F_OUT, bias=False)

    def forward(self, x, flags):
        y = self.fc(x)
        if (flags != 0).sum() > 0:  # a value read back: bool() of a 0-d tensor
            y = y * 3
        return y


def _network(flags):
    return capture(Branching(), torch.zeros(B, F_IN), flags, mode="inference")


def test_the_branch_the_inputs_take():
    with_mul = _network(torch.tensor([0, 1, 0]))
    without = _network(torch.zeros(3, dtype=torch.long))
    # the GEMM both ways; the multiply (B x F_OUT values read and written) only where flagged
    assert len(with_mul.gemms()) == len(without.gemms()) == 1
    muls = [op for op in with_mul.ops() if op.kind == "aten.mul"]
    assert len(muls) == 1 and muls[0].flops == B * F_OUT
    assert "aten.mul" not in [op.kind for op in without.ops()]


def test_values_not_given_still_fail_in_one_line():
    with pytest.raises(CaptureError, match=r"cannot be called on meta tensors.*values"):
        _network(torch.zeros(3, dtype=torch.long, device="meta"))


def test_random_values_are_not_known():
    class Random(Branching):
        def forward(self, x, flags):
            return self.fc(x) if (torch.rand_like(flags) + flags).sum() > 0 else x

    with pytest.raises(CaptureError, match="cannot be called on meta tensors"):
        capture(Random(), torch.zeros(B, F_IN), torch.zeros(3), mode="inference")


def test_a_write_of_unknown_values_forgets():
    class Overwritten(Branching):
        def forward(self, x, flags):
            y = self.fc(x)
            f = flags.clone().float()
            f.add_(y[0, :3])  # the layer's output: no values on the meta device
            return y * 3 if f.sum() > 0 else y

    with pytest.raises(CaptureError, match="cannot be called on meta tensors"):
        capture(Overwritten(), torch.zeros(B, F_IN), torch.ones(3), mode="inference")


def test_the_values_never_count():
    """The host's copies run no op of the capture's: the flags' comparison and sum are counted
    once, on the meta device, as ops of 3 values."""
    network = _network(torch.tensor([0, 1, 0]))
    small = [op for op in network.ops() if op.kind in ("aten.ne", "aten.sum")]
    assert sorted(op.kind for op in small) == ["aten.ne", "aten.sum"]


def test_gpt2_with_its_attention_mask():
    need("transformers", extra="hf")
    import transformers

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    b, s, heads, d, layers = 2, 64, 4, 16, 2
    config = transformers.GPT2Config(n_layer=layers, n_head=heads, n_embd=heads * d,
                                     n_positions=s, vocab_size=128)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(config)

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            return self.model(input_ids=ids, attention_mask=mask).logits

    ids = torch.zeros(b, s, dtype=torch.long)
    ones = torch.ones(b, s, dtype=torch.long)
    padded = ones.clone()
    padded[1, s // 2:] = 0

    def attention(mask):
        network = capture(Step(), ids, mask, mode="inference", attention="flash")
        return [op for op in network.ops() if op.kind == "flash-attention"]

    causal, masked = attention(ones), attention(padded)
    assert len(causal) == len(masked) == layers
    assert all(op.flops == 4 * b * heads * d * s * s // 2 and op.attention.causal
               and not op.attention.masked for op in causal)
    # the mask read for every score: priced with its per-score work (analysis/gpu_ops)
    assert all(op.flops == 4 * b * heads * d * s * s and not op.attention.causal
               and op.attention.masked for op in masked)


def test_a_write_into_a_view_forgets_its_base_too():
    """The flags' view is overwritten with the layer's output (no values on the meta device):
    the base shares that memory, so a branch on the base is not answered from stale values."""
    class Viewed(Branching):
        def forward(self, x, flags):
            y = self.fc(x)
            f = flags.clone().float()
            f[:2].copy_(y[0, :2])
            return y * 3 if f.sum() > 0 else y

    with pytest.raises(CaptureError, match="cannot be called on meta tensors"):
        capture(Viewed(), torch.zeros(B, F_IN), torch.ones(3), mode="inference")
