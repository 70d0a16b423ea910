"""The whole step's verdict against hand arithmetic: compute time (work / peak) against memory
time (bytes / bandwidth), both affine in the batch."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from roofline import analyze_model

LLAMA = "examples/hf/llama-2-7b.json"
H, FFN, VOCAB, LAYERS = 4096, 11008, 32000, 32


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    monkeypatch.chdir(Path(__file__).parent.parent)


def test_mlp_step_turns_compute_bound_where_hand_arithmetic_says():
    # V100: 125 TFLOP/s fp16, 900 GB/s. fc1 1024 -> 4096, fc2 4096 -> 1000, fp16, no ops:
    # compute 2B (1024 x 4096 + 4096 x 1000) / 125e12 >= memory 2 (B (1024 + 4096) +
    # 1024 x 4096 + B (4096 + 1000) + 4096 x 1000) / 900e9
    flops = 2 * (1024 * 4096 + 4096 * 1000)
    per_row = 2 * (1024 + 4096 + 4096 + 1000)
    fixed = 2 * (1024 * 4096 + 4096 * 1000)
    expected = math.ceil((fixed / 900e9) / (flops / 125e12 - per_row / 900e9))
    step = analyze_model("examples/mlp-1024-4096-1000.yaml", "v100", batch=1).step
    assert step.batch == expected == 168


def test_llama_decode_never_turns_compute_bound_and_says_why(invoke):
    """Decode with 2048 keys: per added sequence, the GEMMs add 2 FLOPs per weight but only
    their A and C rows in bytes; attention adds 4 x 32 x 2048 x 128 FLOPs per layer against
    2 x 2048 x 4096 x 2 bytes of K and V: about 1 FLOP/B, so the step tends to 13 FLOP/B."""
    s = 2048
    matrices = LAYERS * (H * 3 * H + H * H + H * 2 * FFN + FFN * H) + H * VOCAB
    gemm_flops = 2 * matrices
    gemm_bytes = (LAYERS * sum(2 * (k + n) for n, k in ((3 * H, H), (H, H), (2 * FFN, H),
                                                         (H, FFN))) + 2 * (H + VOCAB))
    attn_flops, attn_bytes = 4 * 32 * s * 128, (2 * H + s * 2 * H) * 2
    # norms, adds, silu, gate, rotary (3 FLOPs a value of q and k; the new K and V copied into
    # the cache: none)
    op_flops = LAYERS * (2 * 4 * H + 2 * H + 4 * FFN + FFN + 3 * 2 * H) + 4 * H
    op_bytes = (LAYERS * (2 * 2 * H * 2 + 2 * 3 * H * 2 + 2 * FFN * 2 + 3 * FFN * 2
                          + 2 * 2 * H * 2 + 2 * H * (2 + 2))
                + 2 * H * 2 + 8 + 2 * H * 2)  # ... embedding gather, final norm
    limit = ((gemm_flops + LAYERS * attn_flops + op_flops)
             / (gemm_bytes + LAYERS * attn_bytes + op_bytes))
    step = analyze_model(LLAMA, "h100", batch=64, seq=s, mode="inference", phase="decode").step
    assert step.batch is None
    assert step.intensity_limit == pytest.approx(limit, rel=1e-12)
    assert round(limit, 1) == 13.2
    assert step.limiter == "flash-attention"
    assert step.limiter_share == pytest.approx(LAYERS * attn_bytes / (
        gemm_bytes + LAYERS * attn_bytes + op_bytes), rel=1e-12)
    out = " ".join(invoke("analyze", LLAMA, "--hw", "h100", "--batch", "64", "--seq", "2048",
                          "--mode", "inference", "--phase", "decode").stdout.split())
    assert ("step: memory-bound at every batch: its intensity tends to 13.2 FLOP/B (ridge "
            "295.4); flash-attention (an op) makes 99% of the bytes each sequence adds at 1.0 "
            "FLOP/B") in out


def test_step_verdict_marks_a_batch_that_does_not_fit():
    # prefill of 4096 tokens on a 16 GB T4: compute-bound from batch 1, which does not fit
    # (13.48 GB of weights + 1 GB workspace + 4096 x 0.5 MiB of KV cache > 16 GB)
    step = analyze_model(LLAMA, "t4", batch=1, seq=4096, mode="inference").step
    assert step.batch == 1 and step.max_batch == 0 and step.fits is False
    data = analyze_model(LLAMA, "t4", batch=1, seq=4096, mode="inference").to_dict()["step"]
    assert data["min_compute_bound_batch"] == 1 and data["fits"] is False


def test_the_limiter_named_is_one_that_holds_the_step_down():
    """GPT-2 prefill on an H100: the GEMMs add the most bytes per sequence, but at 622 FLOP/B,
    above the 295.4 ridge; the step tends to 232 FLOP/B because of its ops. The one named is
    the part adding the most bytes among those whose bytes outlast their work: the bias adds,
    1 FLOP per value read and written once in fp16, 1 / (2 x 2 B) = 0.25 FLOP/B."""
    step = analyze_model("examples/hf/gpt2.json", "h100", batch=8, seq=1024, dtype="fp16",
                         mode="inference").step
    assert step.batch is None and step.intensity_limit < 295.4
    assert step.limiter == "bias" and step.limiter_intensity == 0.25


SPARSE_MODEL = """\
name: sparse-relu
batch: 64
dtype: fp32
mode: inference
layers:
  - {type: linear, in: 1000, out: 100, input_nnz: 10, active_out: 50, bias: false,
     activation: relu, name: s}
"""


def test_the_limiter_is_what_makes_the_bytes_not_a_part_below_the_mean(tmp_path, invoke):
    """One sparse linear in fp32 on a V100 (15.7 TFLOP/s, 900 GB/s: ridge 17.4), per added
    sample: the product does 2 x 10 x 50 = 1000 FLOPs over 10 x (4 + 4) nonzeros and indices
    + 10 x 50 touched weights x 4 + 50 outputs x 4 + 50 ids x 4 = 2480 B (0.403 FLOP/B); the
    relu 50 FLOPs over 50 x 4 read + 50 x 4 written = 400 B (0.125 FLOP/B). The step tends to
    1050 / 2880 = 0.365 FLOP/B. Both are memory-bound on the device; the sparse product makes
    2480 / 2880 = 86% of the bytes. (Judged against the step's mean instead, the product sat
    above it and the relu's 14% was named.) There is no sequence: the unit is a sample."""
    path = tmp_path / "sparse.yaml"
    path.write_text(SPARSE_MODEL)
    step = analyze_model(str(path), "v100").step
    assert step.batch is None
    assert step.intensity_limit == pytest.approx(1050 / 2880, rel=1e-12)
    assert step.limiter == "sparse-linear"
    assert step.limiter_share == pytest.approx(2480 / 2880, rel=1e-12)
    assert step.limiter_intensity == pytest.approx(1000 / 2480, rel=1e-12)
    out = " ".join(invoke("analyze", path, "--hw", "v100").stdout.split())
    assert ("step: memory-bound at every batch: its intensity tends to 0.4 FLOP/B (ridge "
            "17.4); the sparse linears make 86% of the bytes each sample adds at 0.4 "
            "FLOP/B") in out


def test_a_training_steps_sparse_passes_are_one_part():
    """SLIDE on Amazon-670K trains: the forward product and both backward ones are the sparse
    linears, one part making nearly every byte (the relu and its gradient, 0%, were named)."""
    step = analyze_model("examples/slide-amazon-670k.yaml", "v100").step
    assert step.batch is None and step.limiter == "sparse-linear"
    assert step.limiter_share > 0.99
