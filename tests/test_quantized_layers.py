"""Which weights a weight format quantizes, as vLLM serves a checkpoint (``model.quantized``):
the LM head, the embedding, a mixture of experts' router and MLA's absorbed decode products stay
at the model's dtype, weights and GEMMs, whatever ``--weights`` and ``--activations`` say; every
figure worked by hand from the shapes.

The rules, from vLLM's source (vllm-project/vllm): ``Fp8Config``, ``AWQConfig`` and
``GPTQConfig.get_quant_method`` quantize ``LinearBase`` and ``FusedMoE`` layers and return None
for a ``VocabParallelEmbedding`` or ``ParallelLMHead``, which then take
``UnquantizedEmbeddingMethod``; ``DeepseekV2MoE`` builds its gate as a ``GateLinear`` given no
quant_config, ``MixtralMoE`` and ``Qwen2MoeSparseMoeBlock`` theirs as ``ReplicatedLinear(...,
quant_config=None)``, while ``Qwen3MoeSparseMoeBlock`` hands its gate the quant_config;
``MLAAttention.process_weights_after_loading`` keeps 16-bit ``W_UK_T`` and ``W_UV`` from a
dequantized ``kv_b_proj`` ("we just store fp16/bf16 copies and perform the bmm's in 16-bit"),
``kv_b_proj`` itself still loaded for the prefill."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline import compare, network_from_yaml
from roofline.api import analyze_model
from roofline.errors import InputError

HF = Path(__file__).parent.parent / "examples" / "hf"
LLAMA, MIXTRAL, V3 = HF / "llama-2-7b.json", HF / "mixtral-8x7b.json", HF / "deepseek-v3.json"
QWEN3_MOE, MISTRAL, GPT2 = HF / "qwen3-30b-a3b.json", HF / "mistral-7b.json", HF / "gpt2.json"
H100, A100 = "h100-sxm5-80gb", "a100-sxm4-80gb"
# Llama-2-7B: 32 blocks of qkv 4096 x 12288, proj 4096 x 4096, ffn_up 4096 x 22016 (gated),
# ffn_down 11008 x 4096; embedding and LM head 32000 x 4096 each; norms 65 x 4096
H, VOCAB = 4096, 32000
LLAMA_MATRICES = 32 * (H * 3 * H + H * H + H * 2 * 11008 + 11008 * H)
LLAMA_TABLE = VOCAB * H  # the embedding's, and the LM head's own matrix as large
LLAMA_NORMS = 65 * H


def _gemm(report, layer):
    return next(r for r in report.results if r.gemm.layer == layer)


def _decode(model, hw=H100, batch=16, seq=1024, **options):
    return analyze_model(model, hw, batch=batch, seq=seq, mode="inference", phase="decode",
                         **options)


def test_the_counts_by_hand():
    assert LLAMA_MATRICES == 6_476_005_376 and LLAMA_TABLE == 131_072_000
    assert LLAMA_MATRICES + 2 * LLAMA_TABLE + LLAMA_NORMS == 6_738_415_616  # published count


@pytest.mark.parametrize("fmt, hw", [("fp8", H100), ("int8", A100)])
def test_w8a8_leaves_the_lm_head_and_its_gemm_at_the_models_dtype(fmt, hw):
    """Llama-2-7B (fp16) decoding at batch 16 under W8A8 (``--weights X --activations X``):
    the head's GEMM reads its fp16 weights and computes in fp16: A 16 x 4096 x 2 = 131,072, B
    4096 x 32000 x 2 = 262,144,000, C 16 x 32000 x 2 = 1,024,000, 263,299,072 B in all (it read
    B at 1 B, 132 MB, and computed in the format before). The block's qkv stays W8A8: A 16 x
    4096 x 1 = 65,536, B 4096 x 12288 x 1 = 50,331,648, C (the dequantizing epilogue's fp16)
    16 x 12288 x 2 = 393,216: 50,790,400 B."""
    report = _decode(LLAMA, hw, weights=fmt, activations=fmt)
    head = _gemm(report, "lm_head").gemm
    assert (head.dtype, head.stored_b, head.c_dtype, head.dequant_flops) == (
        "fp16", "fp16", "fp16", 0)
    assert head.bytes_by_operand == {"a": 131_072, "b": 262_144_000, "c": 1_024_000}
    assert head.bytes == 263_299_072
    qkv = _gemm(report, "blk.1.qkv").gemm
    assert (qkv.dtype, qkv.stored_b, qkv.c_dtype) == (fmt, fmt, "fp16")
    assert qkv.bytes == 65_536 + 50_331_648 + 393_216 == 50_790_400
    # memory: the blocks' matrices at 1 B, the embedding, the head and the norms at 2 B:
    # 6,476,005,376 + 2 x (2 x 131,072,000 + 266,240) = 7,000,825,856
    assert report.memory.weights == LLAMA_MATRICES + 2 * (2 * LLAMA_TABLE + LLAMA_NORMS)
    assert report.memory.weights == 7_000_825_856


def test_the_lm_heads_time_is_its_fp16_bytes_on_an_h100():
    """At the roof the head is memory-bound: 2 x 16 x 32000 x 4096 = 4,194,304,000 FLOPs at the
    fp16 dense peak, 989.5 TFLOP/s, take 4.24 us; its 263,299,072 B at 3,350 GB/s take 78.6 us
    (39.5 us when its B was counted at fp8's 1 B)."""
    head = _gemm(_decode(LLAMA, weights="fp8", activations="fp8"), "lm_head")
    assert head.gemm.flops == 4_194_304_000
    assert head.time_s == pytest.approx(263_299_072 / 3350e9)


def test_the_precision_line_says_what_the_format_leaves_alone(invoke):
    out = invoke("analyze", str(LLAMA), "--hw", H100, "--batch", "16", "--prompt", "1024",
                 "--generate", "128", "--weights", "fp8", "--activations", "fp8").stdout
    assert ("precision: weights fp8 (scales not counted) x activations fp8 -> C fp16; embedding "
            "and LM head fp16 (vLLM quantizes neither); KV cache fp16; rest fp16") in out
    # the fp8 GEMMs are the blocks' four, not the head (MM129)
    flat = " ".join(out.split())
    assert "fp8 GEMMs: MM1, MM2, MM3, MM4: predicted" in flat
    # with the model's own widths the line has nothing to add
    plain = invoke("analyze", str(LLAMA), "--hw", H100, "--batch", "16", "--seq", "1024",
                   "--mode", "inference", "--phase", "decode", "--kv-cache", "fp8").stdout
    assert "precision: weights fp16 (scales not counted) x activations fp16 -> C fp16; KV " \
           "cache fp8; rest fp16" in plain


def test_the_embedding_stays_at_the_models_dtype_under_int4():
    """Llama-2-7B at int4 (groups of 128): the blocks' 6,476,005,376 matrix values at half a
    byte, 3,238,002,688 B, plus one fp16 scale per 128, 101,187,584 B; the embedding's table
    32000 x 4096 x 2 B = 262,144,000 B, the untied head's as much, the norms 266,240 x 2 B:
    3,864,010,752 B in all. Were the table stored int4 it would take 65,536,000 + 2,048,000 B:
    the weights would be 196,560,000 B fewer."""
    int4 = _decode(LLAMA, weights="int4")
    blocks = LLAMA_MATRICES // 2 + LLAMA_MATRICES // 128 * 2
    assert blocks == 3_238_002_688 + 101_187_584
    embedding = VOCAB * H * 2
    assert embedding == 262_144_000
    assert int4.memory.weights == blocks + embedding + LLAMA_TABLE * 2 + LLAMA_NORMS * 2
    assert int4.memory.weights == 3_864_010_752


@pytest.mark.parametrize("fmt", ["int4", "fp8"])
def test_a_tied_models_table_stays_at_the_models_dtype(fmt):
    """GPT-2 (tied): the token table 50257 x 768 = 38,597,376 values and the position table
    1024 x 768 = 786,432 stay at fp16's 2 B, as do the biases and layer norms (12 x (2304 + 768
    + 3072 + 768 + 4 x 768) + 2 x 768 = 121,344); the 12 blocks' matrices, 12 x (768 x 2304 +
    768 x 768 + 2 x 768 x 3072) = 84,934,656, take the format (int4: half a byte and an fp16
    scale per 128). 124,439,808 parameters in all."""
    tables, rest, matrices = 38_597_376 + 786_432, 121_344, 84_934_656
    assert tables + rest + matrices == 124_439_808
    stored = {"int4": matrices // 2 + matrices // 128 * 2, "fp8": matrices}[fmt]
    report = _decode(GPT2, batch=1, seq=512, dtype="fp16", weights=fmt)
    assert report.memory.weights == stored + 2 * (tables + rest)


def test_mixtral_and_deepseek_keep_their_routers_at_bf16():
    """Mixtral-8x7B (bf16) at batch 16 under fp8 W8A8: its router, 16 x 8 x 4096, reads its bf16
    weights and computes in bf16: A 16 x 4096 x 2 = 131,072, B 4096 x 8 x 2 = 65,536, C 16 x 8
    x 2 = 256: 196,864 B. Memory: the 32 blocks' matrices but the router, 32 x (4096 x 6144 +
    4096 x 4096 + 8 x 3 x 4096 x 14336) = 46,439,333,888 at 1 B; the routers 32 x 4096 x 8 =
    1,048,576, the embedding and head 2 x 131,072,000 and the norms 32 x 8192 + 4096 = 266,240
    at 2 B (46,702,792,704 parameters in all, the published 46.7 B)."""
    report = _decode(MIXTRAL, weights="fp8", activations="fp8")
    router = _gemm(report, "blk.1.router").gemm
    assert (router.dtype, router.stored_b, router.c_dtype) == ("bf16", "bf16", "bf16")
    assert router.bytes == 131_072 + 65_536 + 256 == 196_864
    matrices = 32 * (4096 * 6144 + 4096 * 4096 + 8 * 3 * 4096 * 14336)
    rest = 32 * 4096 * 8 + 2 * 131_072_000 + 32 * 8192 + 4096
    assert matrices == 46_439_333_888 and rest == 263_458_816
    assert matrices + rest == 46_702_792_704
    assert report.memory.weights == matrices + 2 * rest
    # DeepSeek-V3 at tensor parallelism 8: the router is whole on every GPU, 16 x 256 x 7168
    # in bf16: A 16 x 7168 x 2 = 229,376, B 7168 x 256 x 2 = 3,670,016, C 16 x 256 x 2 = 8,192
    v3 = _decode(V3, seq=2048, weights="fp8", activations="fp8", tp=8)
    router = _gemm(v3, "moe_blk.1.router").gemm
    assert (router.dtype, router.stored_b) == ("bf16", "bf16")
    assert router.bytes == 229_376 + 3_670_016 + 8_192


def test_qwen3_moes_router_takes_the_format_as_vllm_hands_it_the_config(invoke):
    """vLLM's Qwen3MoeSparseMoeBlock builds its gate with the quant_config: Qwen3-30B-A3B's
    router under fp8, 16 x 128 x 2048: A 16 x 2048 x 1 = 32,768, B 2048 x 128 x 1 = 262,144,
    C 16 x 128 x 2 = 4,096: 299,008 B; the precision line says so."""
    report = _decode(QWEN3_MOE, weights="fp8", activations="fp8")
    router = _gemm(report, "blk.1.router").gemm
    assert (router.dtype, router.stored_b, router.c_dtype) == ("fp8", "fp8", "bf16")
    assert router.bytes == 32_768 + 262_144 + 4_096 == 299_008
    out = invoke("analyze", str(QWEN3_MOE), "--hw", H100, "--batch", "16", "--seq", "1024",
                 "--mode", "inference", "--phase", "decode", "--weights", "fp8",
                 "--activations", "fp8").stdout
    assert ("; embedding and LM head bf16 (vLLM quantizes neither); routers fp8 "
            "(quantized_router: vLLM's Qwen3-MoE hands its gate the format; a checkpoint "
            "that leaves its gates unconverted, as Qwen's own FP8 ones list every mlp.gate, "
            "keeps them bf16: a checkpoint's list is not read here);") in " ".join(out.split())


def test_a_model_yaml_router_is_kept_unless_quantized_router(tmp_path):
    """One block of 4 experts (hidden 64, ffn 128, top 2), int8 weights: the router's 64 x 4 =
    256 values stay at fp16's 2 B unless ``quantized_router: true`` stores them at 1 B. The
    block's other matrices: qkv 64 x 192, proj 64 x 64, 4 experts of 64 x 128 + 128 x 64:
    12,288 + 4,096 + 65,536 = 81,920 at 1 B; its two layer norms 4 x 64 = 256 at 2 B."""
    def weights(extra: str) -> int:
        model = tmp_path / "moe.yaml"
        model.write_text("batch: 2\nseq: 8\ndtype: fp16\nmode: inference\nweights: int8\n"
                         "layers:\n  - {type: transformer, hidden: 64, heads: 4, ffn: 128, "
                         f"experts: 4, top_k: 2{extra}}}\n")
        report = analyze_model(model, H100)
        router = _gemm(report, "block1.router").gemm
        assert router.stored_b == ("int8" if extra else "fp16")
        return report.memory.weights

    assert weights("") == 81_920 + 2 * (256 + 256)
    assert weights(", quantized_router: true") == 81_920 + 256 + 2 * 256


def test_quantized_router_needs_experts():
    with pytest.raises(InputError, match="quantized_router needs experts"):
        network_from_yaml("layers:\n  - {type: transformer, hidden: 64, heads: 4, "
                          "quantized_router: true}\n")


def test_mlas_absorbed_products_run_at_bf16_on_copies_memory_counts(invoke):
    """DeepSeek-V3 decoding at batch 16 under fp8 W8A8 at tensor parallelism 8 (16 heads a
    GPU): k_up is 16 batched 16 x 512 x 128, A 16 x 16 x 128 x 2 = 65,536, B 16 x 512 x 128 x
    2 = 2,097,152, C 16 x 16 x 512 x 2 = 262,144: 2,424,832 B in bf16; v_up 16 batched 16 x 128
    x 512, A 262,144, B 2,097,152, C 65,536: the same. vLLM keeps W_UK and W_UV as 16-bit copies
    beside the fp8 kv_b: 16 x 512 x (128 + 128) x 2 B = 4,194,304 B a block, x 61 blocks =
    255,852,544 B a GPU, in the weights; none at bf16 (they are then views of kv_b's weight)."""
    report = _decode(V3, seq=2048, weights="fp8", activations="fp8", tp=8)
    for part in ("k_up", "v_up"):
        g = _gemm(report, f"blk.1.{part}").gemm
        assert (g.dtype, g.stored_b, g.batch_count) == ("bf16", "bf16", 16)
        assert g.bytes == 65_536 + 2_097_152 + 262_144 == 2_424_832
    assert 16 * 512 * 256 * 2 * 61 == 255_852_544
    assert report.memory.dequantized_bytes == 255_852_544
    assert _decode(V3, seq=2048, tp=8).memory.dequantized_bytes == 0
    out = " ".join(invoke("analyze", str(V3), "--hw", H100, "--batch", "16", "--seq", "2048",
                          "--mode", "inference", "--phase", "decode", "--weights", "fp8",
                          "--tp", "8").stdout.split())
    assert ("; embedding, LM head and routers bf16 (vLLM quantizes none of them); MLA's k_up "
            "and v_up bf16, on 16-bit copies of kv_b (in the weights);") in out
    assert "(256 MB of them MLA's 16-bit W_UK and W_UV)" in out


def test_a_small_mla_models_weights_by_hand(tmp_path):
    """One MLA block (hidden 256, 4 heads, kv_lora_rank 64, nope 32, rope 16, v 32, no q
    latent), a gated FFN of 512, an embedding and an untied head over 1000 tokens, int8
    weights: the matrices q 256 x 4 x 48 = 49,152, kv_a 256 x 80 = 20,480, kv_b 64 x 4 x 64 =
    16,384, proj 4 x 32 x 256 = 32,768, ffn_up 256 x 1024 = 262,144, ffn_down 512 x 256 =
    131,072: 512,000 at 1 B; the embedding and the head 2 x 256,000, the norms 2 x 256 + 64 +
    256 = 832 at 2 B (1,025,664 B); W_UK and W_UV's copies 4 x 64 x 64 x 2 = 32,768 B:
    1,570,432 B."""
    model = tmp_path / "mla.yaml"
    model.write_text(
        "batch: 2\nseq: 16\ndtype: bf16\nmode: inference\nphase: decode\nweights: int8\n"
        "layers:\n"
        "  - {type: embedding, vocab: 1000, dim: 256}\n"
        "  - {type: transformer, hidden: 256, heads: 4, ffn: 512, gated: true, causal: true,\n"
        "     norm: rmsnorm, rotary: true, kv_lora_rank: 64, qk_nope_head_dim: 32,\n"
        "     qk_rope_head_dim: 16, v_head_dim: 32}\n"
        "  - {type: norm, dim: 256, norm: rmsnorm}\n"
        "  - {type: linear, in: 256, out: 1000}\n")
    memory = analyze_model(model, H100).memory
    assert 49_152 + 20_480 + 16_384 + 32_768 + 262_144 + 131_072 == 512_000
    assert memory.dequantized_bytes == 4 * 64 * (32 + 32) * 2 == 32_768
    assert memory.weights == 512_000 + 2 * (2 * 256_000 + 832) + 32_768 == 1_570_432


def test_compare_substitutes_the_dtype_under_the_same_rule():
    """Mistral-7B (bf16) at int4 on an H100 and a T4, which has no bf16 peak and runs fp16: on
    the T4 the head reads its fp16 weights (4096 x 32000 x 2 = 262,144,000 B) and computes in
    fp16, as the H100's does in bf16; the blocks' qkv keeps int4."""
    result = compare(MISTRAL, [H100, "t4"], batch=4, seq=512, mode="inference",
                     phase="decode", weights="int4")
    for report, dtype in zip(result.reports, ("bf16", "fp16")):
        head = _gemm(report, "lm_head").gemm
        assert (head.dtype, head.stored_b) == (dtype, dtype)
        assert head.bytes_by_operand["b"] == 262_144_000
        assert _gemm(report, "blk.1.qkv").gemm.stored_b == "int4"


def test_a_training_step_under_fp8_runs_the_head_and_routers_at_the_models_dtype():
    """Training under fp8 activations (a Transformer Engine recipe) runs its weight GEMMs in fp8,
    forward and backward, but Megatron-Core keeps two outside it: ``GPTModel``'s output layer,
    a plain ``tensor_parallel.ColumnParallelLinear``, and the router's gating,
    ``router_gating_linear``, at the input's dtype or fp32 (megatron/core/models/gpt/
    gpt_model.py, transformer/moe/router.py): Mixtral's router and LM head, every pass, bf16."""
    report = analyze_model(MIXTRAL, H100, batch=1, seq=128, mode="train", activations="fp8")
    kept = [r.gemm for r in report.results if r.gemm.layer in ("blk.1.router", "lm_head")]
    assert sorted((g.layer, g.pass_) for g in kept) == [
        ("blk.1.router", "backward-data"), ("blk.1.router", "backward-weight"),
        ("blk.1.router", "forward"), ("lm_head", "backward-data"),
        ("lm_head", "backward-weight"), ("lm_head", "forward")]
    assert {g.dtype for g in kept} == {"bf16"}
    fp8 = [r.gemm for r in report.results if r.gemm.layer == "blk.1.qkv"]
    assert len(fp8) == 3 and {g.dtype for g in fp8} == {"fp8"}
    # without other activations nothing changes: every GEMM in the model's dtype
    plain = analyze_model(MIXTRAL, H100, batch=1, seq=128, mode="train")
    assert {r.gemm.dtype for r in plain.results} == {"bf16"}


def test_plan_under_fp8_activations_says_the_head_and_routers_run_bf16():
    """Plan's step and assumptions say what it runs: the weight GEMMs in fp8, the LM head's and
    the routers' in bf16 (the rule above)."""
    from roofline.api import plan
    from roofline.output.plan import step_settings

    result = plan("examples/hf/mixtral-8x7b.json", H100, 8, batch=8, seq=1024, tp=8, pp=1,
                  activations="fp8")
    assert "bf16 (weight GEMMs fp8, the LM head's and routers' bf16)" in step_settings(result)
    (line,) = [a for a in result.assumptions if "--activations" in a]
    assert "but the LM head's and the routers', in bf16" in line
    plain = plan("examples/hf/mixtral-8x7b.json", H100, 8, batch=8, seq=1024, tp=8, pp=1)
    assert not any("--activations" in a for a in plain.assumptions)
    assert "weight GEMMs" not in step_settings(plain)


def test_fp8_weights_on_a_gpu_with_fp8_tensor_cores_say_vllm_runs_w8a8(invoke):
    """vLLM's Fp8LinearMethod runs an fp8 checkpoint as W8A8 where the GPU has fp8 (compute
    capability 8.9 and up: Ada, Hopper, Blackwell) and as Marlin's weight-only GEMM below it
    (an A100): --weights fp8 alone is the weight-only form, so on an H100 the note says which
    option prices what vLLM runs there, and on an A100 it does not."""
    args = ("analyze", "examples/hf/llama-2-7b.json", "--batch", "4", "--prompt", "256",
            "--generate", "16", "--weights", "fp8", "--hw")
    said = "vLLM runs an fp8 checkpoint on a GPU with fp8 Tensor Cores as W8A8"
    assert said in " ".join(invoke(*args, H100).stdout.split())
    assert said not in " ".join(invoke(*args, "a100-sxm4-80gb").stdout.split())
