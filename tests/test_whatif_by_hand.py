"""A hardware buyer's figures from ``compare``, ``sweep``, ``plan`` and ``gemm``, each derived
by hand from the datasheet figures in hwdb/ and a published config, never from the code's own
output.

Datasheets (dense peaks; hwdb/ and its sources, checked against NVIDIA's and Intel's pages):
H100 SXM5 989.5 bf16 TFLOP/s (1,979 fp8), 3.35 TB/s; A100 SXM4 80GB 312 bf16 / 156 tf32,
2,039 GB/s; A100 SXM4 40GB 312 bf16, 1,555 GB/s; L4 121 bf16, 300 GB/s, 24 GB; L40S 362.05
bf16, 864 GB/s; Xeon Platinum 8480+ (2 sockets) AMX bf16 2 x 56 x 2.0 GHz x 1024 = 229.376
TFLOP/s, int8 458.752 TOPS, 2 x 8 x 4800 MT/s x 8 B = 614.4 GB/s.

Models: Llama-3-8B (``tests/data/llama-3-8b.json``, Meta's config) and Llama-3.2-1B (Meta's
config.json, written below): hidden 2048, 16 layers, 32 heads of 64, 8 KV heads, FFN 8192
gated, vocab 128256, embeddings tied. Its parameters by hand: the embedding 128256 x 2048 =
262,668,288; a block q 2048^2 + k, v 2 x 2048 x 512 + o 2048^2 + 3 x 2048 x 8192 + 2 norms of
2048 = 60,821,504, x 16 = 973,144,064; the final norm 2048: 1,235,814,400 (Meta's 1.24 B).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import analyze_model, compare, gemm_report, sweep
from roofline.output.whatif import comparison_dict

ROOT = Path(__file__).parent.parent
LLAMA3 = ROOT / "tests" / "data" / "llama-3-8b.json"
LLAMA_1B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "vocab_size": 128256,
}
P_1B = 1_235_814_400  # parameters, by hand (module docstring)
BLOCK_1B = 60_821_504
EMBED_1B = 262_668_288
L3_KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads of 128, bf16: 131,072 B


@pytest.fixture
def llama_1b(tmp_path):
    path = tmp_path / "llama-3.2-1b.json"
    path.write_text(json.dumps(LLAMA_1B))
    return path


def _row(report, name):
    return next(g for g in report.to_dict()["gemms"] if g["name"] == name)


# ------------------------------------------------------------------------------- compare

def test_decode_compare_lm_head_on_five_devices_is_its_bytes_over_each_bandwidth():
    """Llama-3-8B decode, batch 16 at 2048 keys: the untied lm_head is 16 x 128256 x 4096,
    memory-bound everywhere (intensity ~16 FLOP/B). Bytes 2 (16 x 4096 + 4096 x 128256 + 16 x
    128256) = 2 x 527,454,208 = 1,054,908,416 B. Time = bytes / bandwidth: H100 314.9 us, A100
    80GB 517.4 us, L4 3.516 ms, L40S 1.221 ms, Xeon 8480+ 1.717 ms; each speedup over the H100
    is the bandwidth ratio, A100 2039 / 3350 = 0.6087. The qkv GEMM 16 x 6144 x 4096: 2 (65,536
    + 25,165,824 + 98,304) = 50,659,328 B, 15.12 us on the H100."""
    bandwidth = {"h100-sxm5-80gb": 3350e9, "a100-sxm4-80gb": 2039e9, "l4": 300e9,
                 "l40s": 864e9, "xeon-platinum-8480plus": 614.4e9}
    c = compare(LLAMA3, list(bandwidth), batch=16, seq=2048, mode="inference", phase="decode")
    for report in c.reports:
        head = _row(report, "MM129")
        assert head["bytes"] == 1_054_908_416 and head["bound"] == "memory"
        assert head["time_s"] == pytest.approx(1_054_908_416 / bandwidth[report.hardware.name])
    assert _row(c.baseline, "MM1")["time_s"] == pytest.approx(50_659_328 / 3350e9)
    assert c.speedup(c.reports[1]) == pytest.approx(2039 / 3350, rel=1e-3)


def test_decode_compare_memory_is_weights_cache_and_a_gpus_workspace():
    """Weights 2 x 8,030,261,248 = 16,060,522,496 B; the KV cache 131,072 B a token x 2048 x 16
    = 4,294,967,296 B; activations, the most one layer holds at once, the lm_head's input and
    logits 16 x (4096 + 128256) x 2 = 4,235,264 B: 20,359,725,056 on the Xeon (no workspace on
    a CPU, and its entry states no capacity: fits unknown), + the stated 1 GB workspace on a
    GPU: 21,359,725,056, which fits the L4's 24 GB, just."""
    c = compare(LLAMA3, ["l4", "xeon-platinum-8480plus"], batch=16, seq=2048,
                mode="inference", phase="decode")
    l4, xeon = c.reports
    by_hand = 16_060_522_496 + L3_KV_PER_TOKEN * 2048 * 16 + 16 * (4096 + 128256) * 2
    assert xeon.memory.total_bytes == by_hand == 20_359_725_056 and c.fits(xeon) is None
    assert l4.memory.total_bytes == by_hand + 10**9 and c.fits(l4) is True


def test_prefill_compare_a_gemm_that_changes_roof():
    """Llama-3-8B prefill, batch 1 x 256 tokens: qkv 256 x 6144 x 4096, 2 x 256 x 6144 x 4096 =
    12,884,901,888 FLOP over 2 (1,048,576 + 25,165,824 + 1,572,864) = 55,574,528 B: 231.85
    FLOP/B, above the A100's ridge 312 / 2.039 = 153.0 (compute-bound: 41.30 us) and under the
    H100's 989.5 / 3.35 = 295.4 (memory-bound: 16.59 us): 2.49x, neither ratio of peaks (3.17)
    nor of bandwidths (1.64)."""
    c = compare(LLAMA3, ["a100", "h100"], batch=1, seq=256, mode="inference", phase="prefill")
    a100, h100 = (_row(r, "MM1") for r in c.reports)
    assert a100["intensity"] == pytest.approx(12_884_901_888 / 55_574_528)
    assert a100["bound"] == "compute" and h100["bound"] == "memory"
    assert a100["time_s"] == pytest.approx(12_884_901_888 / 312e12)
    assert h100["time_s"] == pytest.approx(55_574_528 / 3350e9)
    assert a100["time_s"] / h100["time_s"] == pytest.approx(2.49, abs=0.005)
    assert c.reports[0].ridge == pytest.approx(312 / 2.039, abs=0.05)
    assert c.reports[1].ridge == pytest.approx(989.5 / 3.35, abs=0.05)


def test_a_memory_bound_verdict_names_the_bytes_a_substituted_dtype_moves():
    """Llama-3-8B decode in fp8, batch 16 at 1024 keys: the A100 has no fp8 and runs fp16, so
    it reads every weight and cached key in 2 B where the H100 reads 1: the GEMM weights
    7,504,658,432 x 1 + the cache 16 x 1024 x 65,536 = 8,578,400,256 B against 2 x
    7,504,658,432 + 16 x 1024 x 131,072 = 17,156,800,512 B, 2.0x (the activations and norms
    add ~1%). The A100 is then 3350 / 2039 x 2.0 = 3.28x slower, not the bandwidth ratio's
    1.64x: the verdict, which said "bandwidth decides (2039 vs 3350 GB/s)" alone, must name the
    doubled bytes (the per-GEMM line already did)."""
    c = compare(LLAMA3, ["h100", "a100"], batch=16, seq=1024, mode="inference",
                phase="decode", dtype="fp8")
    h100, a100 = c.reports
    assert (h100.dtype, a100.dtype) == ("fp8", "fp16")
    moved = a100.totals["bytes"] / h100.totals["bytes"]
    assert moved == pytest.approx(17_156_800_512 / 8_578_400_256, rel=0.01)
    assert 1 / c.speedup(a100) == pytest.approx(3350 / 2039 * moved, rel=1e-3)
    assert 1 / c.speedup(a100) == pytest.approx(3.28, abs=0.01)
    assert ("so bandwidth decides (2039 vs 3350 GB/s), and it runs fp16 for fp8, moving 2x the "
            "bytes") in comparison_dict(c)["verdict"]


def test_training_compare_qkv_is_flops_over_each_peak(llama_1b):
    """Llama-3.2-1B training, batch 8 x 2048 = 16,384 tokens: the qkv GEMM 16384 x 3072 x 2048
    (3072 = 2048 + 2 x 512) is 2 x 16384 x 3072 x 2048 = 206,158,430,208 FLOP, compute-bound on
    every device: H100 208.3 us, A100 660.8 us, L4 1.704 ms, L40S 569.4 us, Xeon (AMX bf16)
    898.8 us; the A100's speedup is the peak ratio 312 / 989.5 = 0.3153."""
    peak = {"h100-sxm5-80gb": 989.5e12, "a100-sxm4-40gb": 312e12, "l4": 121e12,
            "l40s": 362.05e12, "xeon-platinum-8480plus": 229.376e12}
    c = compare(llama_1b, list(peak), batch=8, seq=2048, mode="train")
    for report in c.reports:
        qkv = _row(report, "MM1")
        assert (qkv["m"], qkv["n"], qkv["k"]) == (16384, 3072, 2048)
        assert qkv["flops"] == 206_158_430_208 and qkv["bound"] == "compute"
        assert qkv["time_s"] == pytest.approx(206_158_430_208 / peak[report.hardware.name])
    assert c.reports[0].network.parameters == P_1B


def test_a_training_step_without_an_optimizer_says_its_memory_leaves_out_adams_states(
        llama_1b, invoke):
    """A config.json has no optimizer, so compare and sweep count none: Llama-3.2-1B at batch 8
    needs 34.5 GB, which "fits" an A100 40GB (42.3 GB as CUDA reports it), but mixed-precision Adam keeps an fp32 master copy
    and two fp32 moments, 12 B a parameter: 12 x 1,235,814,400 = 14,829,772,800 B more, 49.3 GB,
    which does not. The memory each command prints must say what it leaves out, and how much
    Adam adds (before 0.9.0 compare and sweep printed the fit without a word)."""
    args = [llama_1b, "--batch", "8", "--seq", "2048", "--mode", "train"]
    note = ("not counted: optimizer states (optimizer none: Adam's fp32 states would add "
            "14.8 GB; give --optimizer adam)")
    out = invoke("compare", *args, "--hw", "h100", "--hw", "a100-sxm4-40gb").output
    assert f"memory: {note}" in out
    out = invoke("sweep", *args, "--hw", "a100-sxm4-40gb").output
    assert (f"memory: batch <= 10 fits in memory at seq 2048 (the 42.3 GB CUDA reports); {note}"
            in out)
    out = " ".join(invoke("analyze", *args, "--hw", "a100-sxm4-40gb").output.split())
    assert note in out
    plain = analyze_model(llama_1b, "a100-sxm4-40gb", batch=8, seq=2048, mode="train")
    adam = analyze_model(llama_1b, "a100-sxm4-40gb", batch=8, seq=2048, mode="train",
                         optimizer="adam")
    assert adam.memory.optimizer == 12 * P_1B == 14_829_772_800
    assert adam.memory.total_bytes - plain.memory.total_bytes == 12 * P_1B
    assert plain.memory.fits and not adam.memory.fits
    # with an optimizer given, or in inference, nothing is left out and nothing is said
    for extra in (["--optimizer", "adam"], ["--optimizer", "sgd"]):
        assert "not counted: optimizer" not in invoke("compare", *args, *extra, "--hw", "h100",
                                                      "--hw", "l4").output
    assert "not counted: optimizer" not in invoke(
        "sweep", llama_1b, "--batch", "1,2", "--seq", "64", "--mode", "inference", "--hw",
        "l4").output


# --------------------------------------------------------------------------------- sweep

def test_decode_sweep_on_an_l4_step_time_and_largest_batch():
    """Llama-3-8B decode at 1024 keys on an L4 (300 GB/s, "24GB"). Batch 1 reads every GEMM
    weight, 2 x 7,504,658,432 = 15,009,316,864 B, and a cache of 1024 x 131,072 = 134,217,728
    B: 15.14 GB / 300 GB/s = 50.5 ms (the few MB of activations and norms aside). Memory: the
    23,570,219,008 B CUDA reports on an L4 (hwdb, deviceQuery) - 16,060,522,496 (weights) - 1e9
    (workspace) = 6,509,696,512 B for the caches and activations, 134,217,728 B of cache a
    sequence: 48.5, at most 48 sequences (the datasheet's 24e9 said 51.7 -> 51)."""
    s = sweep(LLAMA3, "l4", batches=[1, 48, 49], seqs=None, seq=1024, mode="inference",
              phase="decode")
    one = s.reports[0]
    assert one.totals["time_s"] == pytest.approx((15_009_316_864 + 134_217_728) / 300e9,
                                                 rel=2e-3)
    assert s.max_batch == 48
    assert [r.memory.fits for r in s.reports] == [True, True, False]


def test_decode_sweep_closed_form_compute_bound_batch_of_ffn_up():
    """The ffn_up GEMM (gate and up fused) b x 28672 x 4096 in bf16 has intensity
    b N K / (b K + K N + b N); it reaches the L4's ridge 121 / 0.3 = 403.33 FLOP/B where
    b (N K - 403.33 (K + N)) = 403.33 N K: b = 403.33 x 117,440,512 / (117,440,512 - 403.33 x
    32,768) = 454.5, so from batch 455."""
    s = sweep(LLAMA3, "l4", batches=[1, 8], seq=1024, mode="inference", phase="decode")
    ridge = 121 / 0.3
    n, k = 28672, 4096
    by_hand = ridge * n * k / (n * k - ridge * (n + k))
    assert by_hand == pytest.approx(454.5, abs=0.05)
    assert s.transitions()["MM3"] == 455


# ---------------------------------------------------------------------------------- gemm

@pytest.mark.parametrize("hw, dtype, m, n, k, size, c_size, rate, bandwidth, bound", [
    # A100 tf32, 8192^3: 4 B operands and fp32 C, 3 x 4 x 8192^2 = 805,306,368 B; 1365.3 FLOP/B
    # over the tf32 ridge 156 / 2.039 = 76.5: compute-bound, 2 x 8192^3 / 156e12 = 7.048 ms
    ("a100", "tf32", 8192, 8192, 8192, 4, 4, 156e12, 2039e9, "compute"),
    # H100 fp8, 16 x 4096 x 4096: 1 B operands, C bf16 (2 B): 65,536 + 16,777,216 + 2 x 65,536
    # = 16,973,824 B, 31.6 FLOP/B: memory-bound, 5.067 us
    ("h100", "fp8", 16, 4096, 4096, 1, 2, 1979e12, 3350e9, "memory"),
    # Xeon 8480+ int8 (AMX), C int32: 65,536 + 16,777,216 + 4 x 65,536 = 17,104,896 B, 27.84 us
    ("8480+", "int8", 16, 4096, 4096, 1, 4, 458.752e12, 614.4e9, "memory"),
])
def test_gemm_bytes_and_time_by_dtype(hw, dtype, m, n, k, size, c_size, rate, bandwidth, bound):
    """One GEMM's bytes: A (M K) and B (K N) at the operands' size, C (M N) at its own; time =
    max(FLOPs / peak, bytes / bandwidth)."""
    report = gemm_report(m, n, k, hw, dtype=dtype)
    row = report.to_dict()["gemms"][0]
    flops, size_bytes = 2 * m * n * k, size * (m * k + k * n) + c_size * m * n
    assert (row["flops"], row["bytes"], row["bound"]) == (flops, size_bytes, bound)
    assert row["time_s"] == pytest.approx(max(flops / rate, size_bytes / bandwidth))


# ---------------------------------------------------------------------------------- plan

def _plan(invoke, model, *args):
    out = invoke("plan", model, "--format", "json", *args).stdout
    return json.loads(out)


def test_plan_on_pcie_l4s_zero_traffic_by_stage(invoke, llama_1b):
    """Llama-3.2-1B, global batch 32 x 2048, on 2 L4s linked by PCIe Gen4 x16 (31.5 GB/s a
    direction, 5.7 us a step); bf16 gradients 2 x 1,235,814,400 = 2,471,628,800 B = G, 8
    micro-batches of 2 a rank. Ring: ZeRO-1 all-reduces once, 2 (n - 1) / n G / bw + 2 (n - 1)
    x 5.7 us = 78.47 ms; ZeRO-2 reduce-scatters after each micro-batch and all-gathers the
    weights once, 9 x (G / 2 / bw + 5.7 us) = 353.2 ms; ZeRO-3 all-gathers before each forward
    and backward and reduce-scatters after, 3 x 8 = 24 of them: 941.7 ms."""
    data = _plan(invoke, llama_1b, "--hw", "l4", "--gpus", "2", "--batch", "32", "--seq",
                 "2048", "--tp", "1", "--pp", "1", "--micro-batch", "2", "--top", "9")
    g, bw, step = 2 * P_1B, 31.5e9, 5.7e-6
    half = g / 2 / bw + step
    hidden = {lay["zero"]: lay["parts"]["dp_comm_overlapped_s"]
              for lay in data["counts"][0]["layouts"]}
    assert hidden[1] == pytest.approx(2 * half)
    assert hidden[2] == pytest.approx(9 * half)
    assert hidden[3] == pytest.approx(24 * half)


def test_plan_hierarchical_all_reduce_over_two_a100_nodes(invoke, llama_1b):
    """16 A100 40GB, 8 a node on NVSwitch (300 GB/s, 3.4 us), nodes on InfiniBand NDR (50 GB/s
    a GPU, 14 us): a hierarchical all-reduce of G = 2,471,628,800 B reduce-scatters in the node
    (7/8 G / 300e9 + 7 x 3.4 us), all-reduces its eighth across the 2 nodes (2 x 1/2 x G/8 /
    50e9 + 2 x 14 us) and all-gathers in the node again: 14.418 + 6.179 ms + 75.6 us = 20.67
    ms. ZeRO-2 per GPU: all the bf16 weights, G = 2,471,628,800 B; the gradients and Adam's 12
    B a parameter sharded 16 ways: 154,476,800 and 926,860,800 B."""
    data = _plan(invoke, llama_1b, "--hw", "a100-sxm4-40gb", "--gpus", "16", "--batch", "64",
                 "--seq", "2048", "--tp", "1", "--pp", "1", "--micro-batch", "4", "--zero",
                 "2")
    (lay,) = data["counts"][0]["layouts"]
    g = 2 * P_1B
    by_hand = (2 * (7 / 8 * g / 300e9 + 7 * 3.4e-6)
               + 2 * (1 / 2) * (g / 8) / 50e9 + 2 * 14e-6)
    assert by_hand == pytest.approx(20.67e-3, abs=0.01e-3)
    assert lay["parts"]["dp_comm_overlapped_s"] == pytest.approx(by_hand)
    memory = lay["memory"]
    assert memory["weights"] == g
    assert memory["gradients"] == g // 16 == 154_476_800
    assert memory["optimizer"] == 12 * P_1B // 16 == 926_860_800


def test_plan_two_stage_pipeline_of_a_tied_model(invoke, llama_1b):
    """4 L4s as 2 stages x dp 2, micro-batches of 2 (8 a rank), ZeRO-1. Stage 0 holds the
    embedding and 8 blocks: 262,668,288 + 8 x 60,821,504 = 749,240,320 parameters (the last
    stage keeps its own copy of the tied table for the logits), bf16 weights and gradients
    1,498,480,640 B each, Adam's 12 B halved by ZeRO-1: 4,495,441,920 B. Each boundary carries
    2 x 2048 x 2048 x 2 = 16,777,216 B a micro-batch (activations forward, their gradient
    back), each stage sending one: 8 x (16,777,216 / 31.5e9 + 5.7 us) = 4.3065 ms. 1F1B bubble
    (Narayanan et al. 2021): (p - 1) / (m + p - 1) = 1/9, (p - 1) = 1 micro-batch's time,
    compute / 8 + its send; the stage's all-reduce over dp 2: 1,498,480,640 / 31.5e9 + 2 x 5.7
    us = 47.58 ms."""
    data = _plan(invoke, llama_1b, "--hw", "l4", "--gpus", "4", "--batch", "32", "--seq",
                 "2048", "--tp", "1", "--pp", "2", "--micro-batch", "2", "--zero", "1")
    (lay,) = data["counts"][0]["layouts"]
    stage0 = EMBED_1B + 8 * BLOCK_1B
    assert stage0 == 749_240_320
    assert lay["memory"]["weights"] == lay["memory"]["gradients"] == 2 * stage0
    assert lay["memory"]["optimizer"] == 12 * stage0 // 2 == 4_495_441_920
    send = 16_777_216 / 31.5e9 + 5.7e-6
    parts = lay["parts"]
    assert lay["micro_batches"] == 8 and lay["bubble_fraction"] == pytest.approx(1 / 9)
    assert parts["p2p_s"] == pytest.approx(8 * send)
    assert parts["bubble_s"] == pytest.approx(parts["compute_s"] / 8 + send)
    assert parts["dp_comm_overlapped_s"] == pytest.approx(2 * stage0 / 31.5e9 + 2 * 5.7e-6)
