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


def _mixtral_decode_by_hand(batch: int, keys: int) -> tuple[int, int]:
    """(FLOPs, bytes) of one Mixtral-8x7B decode step in bf16 at ``batch`` sequences against
    ``keys`` cached tokens, by hand from the config: hidden 4096, 32 query heads of 128
    (hq 4096), 8 KV heads (hkv 1024), 8 experts of FFN 14336 (gated: up 2 x 14336), top 2,
    vocab 32000, 32 blocks. The b tokens' 2b routed rows spread over the experts they reach:
    min(8, 2b) experts of ceil(2b / 8) rows each once all 8 are reached, else 2b experts of one
    row. Every GEMM reads its weight once (2 B a value) and its A and C rows; ops by the
    per-element table (FLOPs, values read, values written): rmsnorm (4, 1, 1), rotary on q and
    k (3, 1, 1), residual and gate (1, 2, 1), silu (4, 1, 1), the router's softmax (5, 1, 1);
    the new K and V copied into the cache (0 FLOPs, read and written); flash attention reads q,
    the cache's K and V and writes o, 4 x heads x keys x 128 FLOPs a token; the embedding
    gathers a row by an 8-byte id; a final rmsnorm, then the logits."""
    h, hq, hkv, experts, top, ffn, vocab, blocks = 4096, 4096, 1024, 8, 2, 14336, 32000, 32
    b = batch
    active = min(experts, top * b)
    rows = active * -(-top * b // active)  # rows the expert GEMMs run, summed over experts
    gemms = [  # (rows M, N, K, weight matrices read) per block
        (b, hq + 2 * hkv, h, 1), (b, h, hq, 1), (b, experts, h, 1),
        (rows, 2 * ffn, h, active), (rows, h, ffn, active)]
    flops = blocks * sum(2 * m * n * k for m, n, k, _ in gemms) + 2 * b * vocab * h
    nbytes = blocks * sum(2 * (m * k + count * k * n + m * n) for m, n, k, count in gemms)
    nbytes += 2 * (b * h + h * vocab + b * vocab)
    routed = top * b
    ops = [  # (FLOPs, values read, values written, elements) per block
        (4, 1, 1, b * h), (3, 1, 1, b * (hq + hkv)), (0, 1, 1, b * 2 * hkv), (1, 2, 1, b * h),
        (4, 1, 1, b * h), (5, 1, 1, b * experts), (4, 1, 1, routed * ffn),
        (1, 2, 1, routed * ffn), (1, 2, 1, routed * h), (1, 2, 1, b * h)]
    flops += blocks * (sum(f * n for f, _, _, n in ops) + 4 * 32 * keys * 128 * b)
    nbytes += blocks * (sum(2 * (r + w) * n for _, r, w, n in ops)
                        + 2 * b * (2 * hq + 2 * keys * hkv))
    flops += 4 * b * h  # the final rmsnorm
    nbytes += 2 * (2 * b * h) + b * (2 * h * 2 + 8)  # final rmsnorm; gather: row read, written
    return flops, nbytes


def test_mixtral_decode_turns_compute_bound_once_every_expert_runs(invoke):
    """A decode step at batch 1 reads the weights of the 2 experts its token is routed to, at
    batch 2 of 4, and from batch 4 of all 8: the step's bytes are not affine in the batch below
    that, and the verdict, drawn from batches 1 and 2, read each added sequence as adding 2
    experts' weights (1.1 FLOP/B: "memory-bound at every batch"). From batch 4 a sequence adds
    its GEMMs' work on its token and 2 routed rows, 25.57 GFLOP, over 39.69 MB: its 128 keys of
    K and V, 32 x 128 x 2 x 1024 x 2 B = 16.78 MB, and q and o, 0.52 MB; its GEMM rows, 32 x
    (20,480 + 16,384 + 8,208 + 2 x 102,400) + 72,192 B = 8.07 MB; its ops, 32 x 446,496 +
    32,776 B = 14.32 MB: 644 FLOP/B, over the H200's 206 ridge (989.5 TFLOP/s bf16, 4800
    GB/s). The batch is the one from which every batch is compute-bound, over the step's exact
    sums: between multiples of 4 the experts' rows round up (ceil(2b / 8) each), work added at
    3,400 FLOP/B, so 1101-1103 read compute-bound where 1104 does not."""
    keys = 128
    f4, b4 = _mixtral_decode_by_hand(1024, keys)
    f8, b8 = _mixtral_decode_by_hand(2048, keys)
    assert (f8 - f4, b8 - b4) == (1024 * 25_570_952_448, 1024 * 39_690_248)
    limit = (f8 - f4) / (b8 - b4)

    def compute_bound(batch: int) -> bool:
        flops, nbytes = _mixtral_decode_by_hand(batch, keys)
        return flops / 989.5e12 >= nbytes / 4800e9

    expected = 1 + max(b for b in range(1, 4096) if not compute_bound(b))
    assert expected == 1105 and [compute_bound(b) for b in range(1100, 1105)] == [
        False, True, True, True, False]
    report = analyze_model("examples/hf/mixtral-8x7b.json", "h200", batch=8, seq=keys,
                           mode="inference", phase="decode")
    # the hand count is the step's (batch 8: all 8 experts, 2 rows each)
    assert (report.totals["flops"], report.totals["bytes"]) == _mixtral_decode_by_hand(8, keys)
    step = report.step
    assert step.intensity_limit == pytest.approx(limit, rel=1e-12)
    assert round(limit) == 644
    assert step.batch == expected
    assert step.limiter == "flash-attention"
    out = " ".join(invoke("analyze", "examples/hf/mixtral-8x7b.json", "--hw", "h200",
                          "--batch", "8", "--seq", str(keys), "--mode", "inference",
                          "--phase", "decode").stdout.split())
    assert f"step: compute-bound from batch {expected} (the whole step's FLOP time" in out
