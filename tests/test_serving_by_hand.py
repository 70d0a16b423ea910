"""The figures a user serving or training an LLM reads, each derived by hand from a published
formula and a published config (grouped-query attention, a sliding window, a mixture of experts),
none from the code's own output.

Configs: Llama-3-8B (``tests/data/llama-3-8b.json``, Meta's published config.json: hidden 4096,
32 layers, 32 heads of 128, 8 KV heads, FFN 14336 gated, vocab 128256, untied), and the bundled
Mistral-7B v0.1 (8 KV heads, window 4096) and Mixtral-8x7B (8 experts, top 2). H100 SXM5:
3.35 TB/s, 989.5 dense bf16 TFLOP/s, 85,017,493,504 B as CUDA reports it (hwdb).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import analyze_model
from roofline.analysis.collectives import Fabric
from roofline.analysis.parallel import Layout, evaluate
from roofline.hardware.catalog import load_hardware
from roofline.hardware.links import links
from roofline.model.network import load_network, network_from_yaml

ROOT = Path(__file__).parent.parent
LLAMA3 = ROOT / "tests" / "data" / "llama-3-8b.json"
MISTRAL = ROOT / "examples" / "hf" / "mistral-7b.json"
MIXTRAL = ROOT / "examples" / "hf" / "mixtral-8x7b.json"
BANDWIDTH = 3.35e12  # H100 SXM5, B/s
CAPACITY = 85_017_493_504  # H100 SXM5 80GB as CUDA reports it

# Llama-3-8B by hand: a block's matrices q 4096 x 4096, k and v 4096 x 1024 each (8 KV heads x
# 128), o 4096 x 4096, gate, up and down 3 x 4096 x 14336: 16,777,216 + 8,388,608 + 16,777,216
# + 176,160,768 = 218,103,808; x 32 = 6,979,321,856; the untied lm_head 128256 x 4096 =
# 525,336,576: matrices 7,504,658,432. Besides: the embedding 525,336,576 and the norms 2 x 4096
# a block + 4096 = 266,240: 525,602,816.
L3_MATRICES = 7_504_658_432
L3_OTHER = 525_602_816
L3_PARAMETERS = L3_MATRICES + L3_OTHER  # 8,030,261,248: the published count
# 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B: GQA keeps a quarter of MHA's 524,288
L3_KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2


def _decode(model, **options):
    return analyze_model(model, "h100", mode="inference", phase="decode", **options)


def _op_sum(report, kind, what):
    return sum(o[what] for o in report.to_dict()["ops"] if o["kind"] == kind)


def test_llama_3_8b_parameters_and_weight_bytes_by_format():
    """Parameters 8,030,261,248 (Meta's Llama-3-8B: the count its safetensors hold). Weights as
    the tool documents its formats (analysis.memory): every GEMM weight (B operand) in the
    format but the LM head's, everything else (LM head, embedding, norms) at bf16, as vLLM
    loads an fp8, AWQ or GPTQ checkpoint (its ``ParallelLMHead`` unquantized: model.lm_head).
    The blocks' matrices: 7,504,658,432 GEMM weights less the LM head's 128256 x 4096 =
    525,336,576: 6,979,321,856; the rest 8,030,261,248 - 6,979,321,856 = 1,050,939,392.

    bf16: 2 x 8,030,261,248 = 16,060,522,496 B.
    int8: 6,979,321,856 x 1 + 1,050,939,392 x 2 = 9,081,200,640 B (no scales: per-tensor).
    int4, groups of 128 with an fp16 scale each: 6,979,321,856 / 2 = 3,489,660,928, scales
    6,979,321,856 / 128 x 2 = 109,051,904, the rest 2,101,878,784: 5,700,591,616 B (with the
    head at int4 it was 4,920,795,136: 16% less than a served int4 Llama-3-8B holds)."""
    bf16 = _decode(LLAMA3, batch=1, seq=1)
    assert bf16.network.parameters == 8_030_261_248 == L3_PARAMETERS
    assert bf16.memory.weights == 16_060_522_496
    assert _decode(LLAMA3, batch=1, seq=1, weights="int8").memory.weights == 9_081_200_640
    int4 = _decode(LLAMA3, batch=1, seq=1, weights="int4", group_size=128)
    assert int4.memory.weights == 3_489_660_928 + 109_051_904 + 2_101_878_784 == 5_700_591_616


def test_mixtral_total_and_active_parameters():
    """Mixtral-8x7B (Mistral AI, "Mixtral of experts", 2024: 47B parameters, 13B active). A
    block: attention 4096 x 6144 + 4096 x 4096 = 41,943,040, 8 experts of 3 x 4096 x 14336 =
    176,160,768 each (1,409,286,144), router 4096 x 8 = 32,768, norms 8,192: 1,451,270,144;
    x 32 + embedding and lm_head 2 x 131,072,000 + norm 4,096 = 46,702,792,704. Active: less
    the 6 experts of 8 a token does not run, 32 x 6 x 176,160,768 = 33,822,867,456:
    12,879,925,248. Its bf16 weights, 93.4 GB, do not fit the H100's 85 GB."""
    report = _decode(MIXTRAL, batch=1, seq=1)
    assert report.totals["parameters"] == 46_702_792_704
    assert report.totals["active_parameters"] == 12_879_925_248
    assert report.memory.weights == 2 * 46_702_792_704 and not report.memory.fits


def test_gqa_kv_cache_per_token_and_for_a_batch():
    """KV cache = 2 x layers x kv_heads x head_dim x bytes a token (the K and V each attention
    layer keeps): Llama-3-8B 2 x 32 x 8 x 128 x 2 = 131,072 B (grouped-query: 8 KV heads, not
    32); batch 8 x context 8192: 8 x 8192 x 131,072 = 8,589,934,592 B; an fp8 cache half."""
    assert L3_KV_PER_TOKEN == 131_072
    assert _decode(LLAMA3, batch=1, seq=1).memory.kv_cache == 131_072
    assert _decode(LLAMA3, batch=8, seq=8192).memory.kv_cache == 8_589_934_592
    assert _decode(LLAMA3, batch=8, seq=8192, kv_cache="fp8").memory.kv_cache == 4_294_967_296


def test_a_sliding_window_caps_the_cache_and_the_keys_decode_reads():
    """Mistral-7B v0.1 attends to its last 4096 tokens (Jiang et al. 2023, "rolling buffer
    cache"): at seq 16384, batch 2, the cache keeps 2 x 4096 x (2 x 32 x 8 x 128 x 2 B) =
    1,073,741,824 B, not 16384 tokens' 4,294,967,296. A decode step's attention reads those
    4096 keys: 4 x heads x head_dim x keys FLOPs a layer and sequence (QK^T and PV, 2 each),
    4 x 32 x 128 x 4096 x 32 layers x 2 = 4,294,967,296; bytes the cache itself plus each
    query row and output (2 x 4096 x 2 B a layer and sequence): 1,073,741,824 + 2 x 32 x
    16,384 = 1,074,790,400."""
    report = _decode(MISTRAL, batch=2, seq=16384)
    assert report.memory.kv_cache == 1_073_741_824
    assert _op_sum(report, "flash-attention", "flops") == 4_294_967_296
    assert _op_sum(report, "flash-attention", "bytes") == 1_074_790_400


def test_decode_step_flops_bytes_and_memory_bound_time_per_token():
    """A decode step at batch 1 against a KV cache of 8192 tokens (Llama-3-8B, bf16, H100):

    FLOPs: 2 x matrices = 15,009,316,864 for the GEMMs; attention 4 x 32 x 128 x 8192 x 32 =
    4,294,967,296.
    Bytes: the weights once (the GEMMs' B: 2 x 7,504,658,432 = 15,009,316,864) and the KV
    cache read (8192 x 131,072 = 1,073,741,824, plus each layer's query and output, 32 x
    16,384 B): 16,083,058,688 B at least, plus the activations the ops move (under 0.1%).
    Every item is memory-bound (about 1 FLOP/B against a ridge of 295), so the step takes its
    bytes over the bandwidth: TPOT >= 16,083,058,688 / 3.35e12 = 4.80 ms."""
    report = _decode(LLAMA3, batch=1, seq=8192)
    data = report.to_dict()
    assert report.totals["gemm_flops"] == 15_009_316_864
    assert sum(g["bytes_by_operand"]["b"] for g in data["gemms"]) == 15_009_316_864
    assert _op_sum(report, "flash-attention", "flops") == 4_294_967_296
    assert _op_sum(report, "flash-attention", "bytes") == 1_073_741_824 + 32 * 16_384
    floor = 15_009_316_864 + 1_073_741_824
    assert floor <= report.totals["bytes"] <= floor * 1.001
    assert report.totals["memory_bound_time_fraction"] == 1.0
    assert report.totals["time_s"] == pytest.approx(report.totals["bytes"] / BANDWIDTH)
    assert report.totals["time_s"] == pytest.approx(floor / BANDWIDTH, rel=1e-3)  # 4.80 ms


def test_prefill_flops_are_2_n_tokens_plus_causal_attention():
    """Prefill of 2048 tokens (batch 1, every token's logits): GEMMs 2 x matrices x tokens =
    2 x 7,504,658,432 x 2048 = 30,739,080,937,472 (Kaplan et al. 2020's 2N a token, N the
    non-embedding weights with the output layer); causal attention 4 x layers x d x s^2 / 2
    (QK^T and PV over the lower triangle, the tool's stated convention: s^2 / 2 pairs, not
    s (s + 1) / 2) = 4 x 32 x 4096 x 2048^2 / 2 = 1,099,511,627,776."""
    report = analyze_model(LLAMA3, "h100", mode="inference", phase="prefill", batch=1,
                           seq=2048)
    assert report.totals["gemm_flops"] == 30_739_080_937_472
    assert _op_sum(report, "flash-attention", "flops") == 1_099_511_627_776


def test_largest_decode_batch_that_fits():
    """Llama-3-8B decoding at a KV cache of 8192 on an H100: weights 16,060,522,496 B and the
    1 GB workspace allowance are fixed, each sequence adds 8192 x 131,072 = 1,073,741,824 B of
    cache (and about 2 kB of activations): (85,017,493,504 - 16,060,522,496 - 1e9) /
    1,073,741,824 = 63.3, so 63."""
    assert _decode(LLAMA3, batch=1, seq=8192).memory.max_batch == 63


def test_generation_tokens_per_second_by_hand():
    """Prompt 1024, then 1024 tokens at batch 1: 1023 decode steps over KV caches of 1025 ..
    2047 tokens, all memory-bound, so their mean is the step at the mean cache, 1536 tokens:
    (15,009,316,864 + 1536 x 131,072) / 3.35e12 = 4.540 ms, plus the ops' activations (under
    0.1%). tokens/s = 1024 / (TTFT + 1023 x TPOT)."""
    g = analyze_model(LLAMA3, "h100", batch=1, prompt=1024, generate=1024).generation
    assert g is not None and g.tpot_s is not None
    floor = (15_009_316_864 + 1536 * 131_072) / BANDWIDTH
    assert floor <= g.tpot_s <= floor * 1.001
    assert g.tokens_per_s == pytest.approx(1024 / (g.ttft_s + 1023 * g.tpot_s))


def test_a_generations_memory_says_which_step_it_is(invoke):
    """Batch 8, prompt 2048, 512 tokens: the prefill holds 8 x 2048 x 131,072 = 2,147,483,648
    B of cache and 1.54 GB of activations (20.8 GB), more than the last decode step's 8 x 2559
    x 131,072 = 2,683,305,984 B of cache (19.7 GB). The memory shown is the prefill's, so its
    KV cache is 2048 tokens', and the line must say so: until 0.9.0 it said "fits up to batch
    147 at seq 2559", the last step's length beside the prefill's parts (a reader checking the
    cache at 2559 tokens by hand gets 2.68 GB, not the 2.15 GB shown), and the GEMMs' advice
    "at most batch N fits at this sequence length" of the whole generation's N."""
    report = analyze_model(LLAMA3, "h100", batch=8, prompt=2048, generate=512)
    assert report.generation is not None and report.memory is not None
    assert report.generation.memory_step == "prefill"
    assert report.memory.kv_cache == 8 * 2048 * 131_072
    out = invoke("analyze", LLAMA3, "--hw", "h100", "--batch", "8", "--prompt", "2048",
                 "--generate", "512")
    text = " ".join(out.stdout.split())
    assert ("memory at the generation's peak, the prefill (2048 tokens a sequence): 20.8 GB of "
            "the 85 GB CUDA reports") in text
    assert "the whole generation fits up to batch 147" in text and "at seq 2559" not in text
    # the GEMMs' batch advice says the same batch is the whole generation's, not the table's
    # step's (the last decode step alone fits 202 at 2559 tokens)
    mistral = analyze_model(MISTRAL, "h100", batch=2, prompt=6000, generate=4000)
    said = [text for r in mistral.results for text in r.advice if "fits" in text]
    assert said and all("fits the whole generation)" in text for text in said)
    short = analyze_model(LLAMA3, "h100", batch=8, prompt=128, generate=4096)
    assert short.generation is not None and short.generation.memory_step == "decode"
    assert short.memory is not None and short.memory.kv_cache == 8 * 4223 * 131_072


QWEN2 = ROOT / "examples" / "hf" / "qwen2-7b.json"


def test_a_prefill_limited_generation_names_the_last_decode_steps_own_batch(invoke):
    """Qwen2-7B (hidden 3584, 28 layers, 28 heads of 128, 4 KV heads, FFN 18944 gated, vocab
    152064, untied, qkv biases) on an L40S (47,803,596,800 B, what CUDA reports: hwdb's
    memory.reported_bytes), int4 weights in
    groups of 128, an fp8 cache, prompt 3000 + 400 tokens.

    Weights: the matrices a block holds, q 3584 x 3584, k and v 3584 x 512 each, o 3584 x 3584,
    gate, up, down 3 x 3584 x 18944: 12,845,056 + 3,670,016 + 12,845,056 + 203,685,888 =
    233,046,016; x 28 = 6,525,288,448 matrix values, at half a byte (3,262,644,224) and an
    fp16 scale per 128 (101,957,632); the rest at bf16: lm_head 152064 x 3584 = 544,997,376
    (vLLM keeps it unquantized), embedding 544,997,376, norms 2 x 3584 x 28 + 3584 = 204,288,
    qkv biases 4608 x 28 = 129,024: 1,090,328,064 x 2 = 2,180,656,128. Weights 5,545,257,984 B.
    The fp8 cache: 2 (K, V) x 28 x 4 x 128 x 1 B = 28,672 B a token.
    Prefill, per sequence: 3000 x 28,672 = 86,016,000 B of cache and the widest layer's live
    activations, 3000 tokens x (3584 in + 2 x 18944 gate/up + 18944 silu) x 2 B = 362,496,000:
    448,512,000 B. (47,803,596,800 - 5,545,257,984 - 1e9) / 448,512,000 = 91.99: batch 91.
    The last decode step alone, per sequence: 3399 x 28,672 = 97,456,128 B of cache and the
    logits' layer live, (3584 + 152064) x 2 = 311,296: (47,803,596,800 - 5,545,257,984 -
    1e9) / 97,767,424 = 422.0: batch 422, what a server that prefills a few sequences, or
    chunks, at a time can hold. Until 0.9.0 only the prefill's batch was said."""
    weights = 3_262_644_224 + 101_957_632 + 2_180_656_128
    free = 47_803_596_800 - weights - 1e9
    assert int(free // (3000 * 28_672 + 3000 * (3584 + 3 * 18944) * 2)) == 91
    assert int(free // (3399 * 28_672 + (3584 + 152_064) * 2)) == 422
    report = analyze_model(QWEN2, "l40s", batch=32, prompt=3000, generate=400, weights="int4",
                           kv_cache="fp8")
    g, memory = report.generation, report.memory
    assert g is not None and memory is not None and memory.weights == weights
    assert g.memory_step == "prefill" and memory.max_batch == 91
    assert g.decode_max_batch == 422 and report.to_dict()["generation"]["decode_max_batch"] == 422
    said = ("its prefill, every prompt of the batch at once, is the limit: the last decode step "
            "alone fits up to batch 422")
    options = ["--hw", "l40s", "--prompt", "3000", "--generate", "400", "--weights", "int4",
               "--kv-cache", "fp8"]
    out = invoke("analyze", QWEN2, "--batch", "32", *options).stdout
    assert said in " ".join(out.split())
    out = invoke("sweep", QWEN2, "--batch", "1,32,128", *options).stdout
    assert said in " ".join(out.split())
    # a generation the last decode step limits says nothing more (Llama-2-7B's README example:
    # its fp8 cache of 2047 tokens, not the prefill, is the limit)
    plain = analyze_model(ROOT / "examples" / "hf" / "llama-2-7b.json", "a100-sxm4-80gb",
                          batch=16, prompt=1024, generate=1024, weights="int4", kv_cache="fp8")
    assert plain.generation is not None and plain.generation.decode_max_batch is None


# -- training over GPUs -------------------------------------------------------------------


def _h100_fabric() -> Fabric:
    return Fabric(links()["nvswitch-h100"], links()["ib-ndr"], 8)


def _llama3_train(batch: int):
    return load_network(LLAMA3).with_overrides(batch=batch, seq=4096, optimizer="adam")


@pytest.mark.parametrize("zero, per_parameter", [(0, 16), (1, 2 + 2 + 12 / 8),
                                                 (2, 2 + (2 + 12) / 8), (3, 16 / 8)])
def test_zero_memory_per_gpu_on_8_gpus(zero, per_parameter):
    """ZeRO (Rajbhandari et al., SC'20, sec. 5): mixed-precision Adam keeps 2 (bf16 weights) +
    2 (gradients) + 12 (fp32 master, momentum, variance) bytes a parameter; stage 1 divides the
    12 by Nd, stage 2 the gradients too, stage 3 everything. Llama-3-8B, Nd = 8: 16 Psi =
    128.5 GB (does not fit 85 GB), 5.5 Psi = 44,166,436,864, 3.75 Psi = 30,113,479,680, 2 Psi =
    16,060,522,496 B."""
    result = evaluate(_llama3_train(8), load_hardware("h100"), Layout(dp=8, zero=zero), 8,
                      _h100_fabric())
    memory = result.memory
    states = memory["weights"] + memory["gradients"] + memory["optimizer"]
    assert states == pytest.approx(per_parameter * L3_PARAMETERS, abs=8)
    assert result.fits is (zero > 0)


def test_data_parallel_all_reduce_time():
    """The gradients' ring all-reduce (Patarasuk and Yuan 2009; NCCL's ring: 2 (n - 1) steps):
    2 (n - 1) / n x bytes / bandwidth + 2 (n - 1) x latency; 8 H100s on NVSwitch (450 GB/s a
    direction, NCCL's 3.4 us a step), bf16 gradients 2 x 8,030,261,248 B: 1.75 x
    16,060,522,496 / 450e9 + 14 x 3.4 us = 62.51 ms. ZeRO-2 reduce-scatters after each of m
    micro-batches and all-gathers once: (m + 1) x (7/8 x 16,060,522,496 / 450e9 + 7 x 3.4 us)."""
    net = _llama3_train(16)
    one = evaluate(net, load_hardware("h100"), Layout(dp=8, zero=1), 16, _h100_fabric())
    assert one.micro_batches == 2
    assert one.stages[0].dp_comm_s == pytest.approx(1.75 * 16_060_522_496 / 450e9 + 14 * 3.4e-6)
    two = evaluate(net, load_hardware("h100"), Layout(dp=8, zero=2), 16, _h100_fabric())
    half = 0.875 * 16_060_522_496 / 450e9 + 7 * 3.4e-6
    assert two.stages[0].dp_comm_s == pytest.approx(3 * half)


GPT = """
name: megatron-style
dtype: fp16
seq: 2048
mode: train
optimizer: adam
layers:
  - {type: embedding, vocab: 51200, dim: 2048, name: emb}
  - {type: transformer, hidden: 2048, heads: 16, causal: true, attention: naive, dropout: 0.1,
     repeat: 8, name: blk}
  - {type: norm, dim: 2048, name: ln_f}
  - {type: linear, in: 2048, out: 51200, name: head}
"""


def test_tensor_parallel_all_reduces_and_activations():
    """Tensor parallelism over 2 A100s (Megatron-LM, Narayanan et al. SC'21 sec. 2.3: "two
    all-reduces in the forward pass and two in the backward pass" a layer), micro-batch 1 x
    2048 tokens, h 2048, fp16: each all-reduce moves T h e = 2048 x 2048 x 2 = 8,388,608 B, on
    NVSwitch (300 GB/s a direction, 3.4 us a step) 2 (2 - 1) / 2 x 8,388,608 / 300e9 + 2 x 3.4
    us = 34.76 us. 8 layers x 4, the vocabulary-parallel embedding's forward one and the
    output layer's backward one: 34; the cross entropy's 3 of T fp32 values (8,192 B each).

    Activations (Korthikanti et al. 2022, sec. 4.2), s b h = 4,194,304, a = 16: without
    sequence parallelism sbh (10 + 24 / t + 5 a s / (h t)) = 62 sbh = 260,046,848 B a layer,
    x 8 = 2,080,374,784; plus the final norm's and the output layer's inputs (2 x T h e =
    16,777,216) and the loss's logits on the GPU's half vocabulary (2048 x 25,600 x 2 =
    104,857,600): 2,202,009,600 B."""
    net = network_from_yaml(GPT).with_overrides(batch=2)
    result = evaluate(net, load_hardware("a100-sxm4-80gb"), Layout(tp=2, dp=1), 2,
                      Fabric(links()["nvswitch-a100"], links()["ib-ndr"], 8))
    per = 8_388_608 / 300e9 + 2 * 3.4e-6
    ce = 8_192 / 300e9 + 2 * 3.4e-6
    assert result.stages[0].tp_comm_s == pytest.approx((8 * 4 + 2) * per + 3 * ce)
    assert result.allreduce_bytes == 8_388_608
    assert result.memory["activations"] == 2_202_009_600


def test_pipeline_bubble_two_stages_four_micro_batches():
    """1F1B (Narayanan et al. SC'21 sec. 2.2): the bubble is (p - 1) / (m + p - 1) of the step;
    p = 2, m = 8 / (dp 2 x micro-batch 1) = 4: 1 / 5; the first stage keeps p = 2
    micro-batches of its 4 layers, Korthikanti's sbh (34 + 5 a s / h) = 114 sbh =
    478,150,656 B each: 3,825,205,248 B."""
    net = network_from_yaml(GPT).with_overrides(batch=8)
    result = evaluate(net, load_hardware("a100-sxm4-80gb"), Layout(pp=2, dp=2, zero=1), 8,
                      Fabric(links()["nvswitch-a100"], links()["ib-ndr"], 8))
    assert result.micro_batches == 4
    assert result.bubble_fraction == pytest.approx(1 / 5)
    assert result.stages[0].memory["activations"] == 2 * 4 * 478_150_656


def test_every_capacity_says_what_it_is_based_on(invoke):
    """An H100 SXM5 80GB is held against the 85,017,493,504 B CUDA reported on one (hwdb
    memory.reported_bytes), an H100 PCIe 80GB against its datasheet's 80 x 10^9 B (no reading
    recorded): the same "80GB" on both boxes, 6% apart, so every line naming a capacity says
    which, and JSON says it beside capacity_bytes."""
    from roofline.output.hardware import capacity_text

    h100, pcie = load_hardware("h100"), load_hardware("h100-pcie-80gb")
    assert (h100.memory_capacity_basis, h100.memory_capacity_bytes) == ("cuda", CAPACITY)
    assert (pcie.memory_capacity_basis, pcie.memory_capacity_bytes) == ("datasheet", 80e9)
    assert capacity_text(80.1e9, "probe") == "the 80.1 GB the probe read"
    assert capacity_text(8e9, None) == "8 GB"
    args = ["--batch", "1", "--seq", "4096", "--mode", "inference", "--phase", "decode"]
    for hw, said in (("h100", "of the 85 GB CUDA reports"),
                     ("h100-pcie-80gb", "of the datasheet's 80 GB")):
        out = invoke("analyze", LLAMA3, "--hw", hw, *args)
        assert said in " ".join(out.stdout.split()), hw
    compared = " ".join(invoke("compare", LLAMA3, "--hw", "h100-pcie-80gb", "--hw", "h100",
                               *args).stdout.split())
    assert ("memory against: h100-pcie-80gb the datasheet's 80 GB, h100-sxm5-80gb the 85 GB "
            "CUDA reports") in compared
    data = json.loads(invoke("analyze", LLAMA3, "--hw", "h100", *args, "--format", "json")
                      .stdout)
    assert data["memory"]["capacity_basis"] == "cuda"
