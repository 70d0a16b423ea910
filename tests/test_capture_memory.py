"""A captured step's memory: its activations the most its tensors held at once beyond its
parameters (roofline/model/capture_memory.py), its optimizer states as torch made them. Worked out
by hand from the shapes and the order torch frees tensors in, and held against what torch
allocated on a lent H100 (benchmarks/data/h100_live_hf_steps.json: ``max_memory_allocated``).

Needs torch (the `torch` extra); the H100 check transformers (the `hf` extra)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.analysis.memory import memory_of, memory_parts  # noqa: E402
from roofline.hardware.catalog import load_hardware  # noqa: E402
from roofline.torch import capture  # noqa: E402

DATA = Path(__file__).parent.parent / "benchmarks" / "data"


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 32))

    def forward(self, x):
        return self.net(x)


class Scaled(torch.nn.Module):
    """(x * w).sum(): a loss over one elementwise product."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(16))

    def forward(self, x):
        return (x * self.w).sum()


def test_inference_holds_the_input_and_two_layers_at_once():
    # fp32, batch 8. The input x (8 x 64 x 4 = 2,048 B) is held throughout. fc1 writes h
    # (8 x 256 x 4 = 8,192 B); ReLU writes r (8,192 B) while h is still held (Sequential drops h
    # only when ReLU returns): x + h + r = 18,432 B. fc2 then writes y (1,024 B) beside x and r:
    # 11,264 B. The peak: 18,432 B; no gradient, so all of it activations.
    network = capture(MLP(), torch.zeros(8, 64), mode="inference")
    assert memory_parts(network)["activations"] == 18_432
    assert memory_of(network, load_hardware("h100")).not_counted == ()


class _Attention(torch.nn.Module):
    def forward(self, x):
        q, k, v = x * 2, x * 3, x * 4
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


class _AfterAttention(torch.nn.Module):
    """A fused attention in a module of its own, then a larger tensor after it returns."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = _Attention()
        self.w = torch.nn.Parameter(torch.ones(()))

    def forward(self, x):
        return self.attn(x).repeat(8, 1, 1, 1) * self.w


def test_a_fused_attention_frees_q_k_and_v_when_its_module_returns():
    # fp32, x of 1 x 1 x 1024 x 64 = 65,536 values (256 KiB), held throughout. In the attention:
    # q, k, v and its output, 5 such tensors with x; once it returns q, k and v go (the module's
    # locals), and its output once repeated (8 x, a temporary); the product (8 x) beside x and
    # the repeat: the peak, 17 x 262,144 B = 4,456,448 B. The capture's autograd node once held
    # Q, K and V in a closure until Python's cycle collector ran: the peak then moved from one
    # capture to the next (20 x where the collector had not run).
    peaks = {memory_parts(capture(_AfterAttention(), torch.zeros(1, 1, 1024, 64),
                                  mode="inference"))["activations"] for _ in range(3)}
    assert peaks == {17 * 262_144}


def test_training_peaks_in_the_backward_with_the_gradient_held():
    # fp32, x 8 x 16 (512 B, held), w 16 (a parameter: weights). Forward: m = x * w (512 B),
    # s = m.sum() (4 B) while m is held: 1,028 B; m is then freed (mul saved x and w, not m).
    # Backward: ds (4 B, the loss's output gradient), sum's backward expands it (a view: 0 B),
    # mul's backward writes ds * x (512 B) and sums it over the batch into dw (64 B), while x, s
    # and ds are held: 512 + 4 + 4 + 512 + 64 = 1,096 B, the peak. Less the gradient memory
    # counts apart (64 B): activations 1,032 B.
    network = capture(Scaled(), torch.zeros(8, 16), mode="train")
    parts = memory_parts(network)
    assert parts["gradients"] == 64
    assert parts["activations"] == 1_032


def test_a_torch_adamw_keeps_its_moments_at_the_parameters_dtype():
    # torch.optim.AdamW on 16 fp32 values: exp_avg and exp_avg_sq, 2 x 16 x 4 = 128 B (its step
    # count lives on the host); mixed-precision Adam's 16 x (8 + 0) would be the same here, so
    # bf16 shows the difference: 2 x 16 x 2 = 64 B where the fused-update formula counts fp32
    # moments and an fp32 master copy, 16 x 12 = 192 B.
    for dtype, expected in (("fp32", 128), ("bf16", 64)):
        network = capture(Scaled(), torch.zeros(8, 16), mode="train", dtype=dtype,
                          optimizer=torch.optim.AdamW)
        assert memory_parts(network)["optimizer"] == expected
    fused = capture(Scaled(), torch.zeros(8, 16), mode="train", dtype="bf16", optimizer="adam")
    assert memory_parts(fused)["optimizer"] == 192


def test_a_dtype_override_scales_the_models_tensors():
    network = capture(MLP(), torch.zeros(8, 64), mode="inference")
    assert memory_parts(network.with_overrides(dtype="bf16"))["activations"] == 18_432 // 2


@pytest.mark.slow
def test_gpt2s_training_step_holds_what_torch_allocated_on_an_h100():
    """GPT-2 (transformers, bf16, batch 8 x 1024, its own loss on its labels): on a lent H100
    torch allocated at most 9.98 GB (weights, gradients, activations); the capture's weights,
    gradients and activations within 2% of it."""
    need("transformers", extra="hf")
    import transformers

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    measured = {r["step"]: r for r in json.loads((DATA / "h100_live_hf_steps.json").read_text())}
    config = json.loads((DATA.parent.parent / "examples" / "hf" / "gpt2.json").read_text())
    kwargs = {k: v for k, v in config.items() if not k.startswith("_") and k != "architectures"}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**kwargs), attn_implementation="sdpa",
            dtype=torch.bfloat16)

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            return self.model(input_ids=ids, attention_mask=mask, labels=ids).loss

    ids = torch.zeros(8, 1024, dtype=torch.long)
    network = capture(Step(), ids, torch.ones_like(ids), mode="train")
    parts = memory_parts(network)
    held = parts["weights"] + parts["gradients"] + parts["activations"]
    assert held / measured["gpt2-train"]["max_memory_bytes"] == pytest.approx(1.0, abs=0.02)


def test_a_sparse_input_fails_in_one_line_as_before():
    """torch's meta device runs no sparse product: the capture says so in one line (the memory
    count, which a sparse tensor's missing storage once broke with a traceback, skips it)."""
    from roofline.model.capture import CaptureError

    class Sparse(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(64, 32))

        def forward(self, x):
            return torch.sparse.mm(x, self.w)

    with pytest.raises(CaptureError, match="aten._sparse_addmm failed on the meta device"):
        capture(Sparse(), torch.eye(64).to_sparse(), mode="train")
