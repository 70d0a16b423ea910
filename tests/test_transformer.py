"""Transformer blocks, embeddings, non-GEMM ops and Hugging Face configs, against hand-computed
shapes and published figures (Megatron-LM's FLOP formula, published parameter counts, NVIDIA's
op intensities)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import analyze_model, load_network, network_from_yaml
from roofline.errors import InputError
from roofline.model.ops import elementwise

HF = Path(__file__).parent.parent / "examples" / "hf"

GQA_BLOCK = """
batch: 2
seq: 512
dtype: bf16
mode: {mode}
layers:
  - {{type: transformer, hidden: 4096, heads: 32, kv_heads: 8, ffn: 14336, gated: true,
     attention: naive, name: b}}
"""


def _shapes(net, pass_=None):
    return [(g.layer, g.pass_, g.m, g.n, g.k, g.batch_count) for g in net.gemms()
            if pass_ is None or g.pass_ == pass_]


def test_one_gqa_block_forward_gemm_shapes_by_hand():
    # T = 2 x 512 = 1024 tokens; head_dim = 4096 / 32 = 128; hq = 4096; hkv = 8 x 128 = 1024
    # qkv: T x (4096 + 2 x 1024) x 4096; scores: G = 2 x 32 = 64 batched 512 x 512 x 128;
    # context: 64 x (512 x 128 x 512); proj: T x 4096 x 4096; gated up: T x 2 x 14336 x 4096;
    # down: T x 4096 x 14336
    net = network_from_yaml(GQA_BLOCK.format(mode="inference"))
    assert _shapes(net) == [
        ("b.qkv", "forward", 1024, 6144, 4096, 1),
        ("b.scores", "forward", 512, 512, 128, 64),
        ("b.context", "forward", 512, 128, 512, 64),
        ("b.proj", "forward", 1024, 4096, 4096, 1),
        ("b.ffn_up", "forward", 1024, 28672, 4096, 1),
        ("b.ffn_down", "forward", 1024, 4096, 14336, 1),
    ]
    scores = net.gemms()[1]
    # a batched GEMM's FLOPs and bytes include its count: 64 x 2 x 512 x 512 x 128; bytes are
    # the tensors (bf16): Q 64 x 512 x 128, K shared by groups of 4 query heads, 16 x 512 x 128,
    # S 64 x 512 x 512
    assert scores.flops == 64 * 2 * 512 * 512 * 128
    assert scores.bytes == 2 * (64 * 512 * 128 + 16 * 512 * 128 + 64 * 512 * 512)


def test_one_gqa_block_backward_by_hand():
    # the block is the first weighted layer: no data gradient for qkv; every other weight GEMM
    # has dX and dW; each attention GEMM has two data gradients
    net = network_from_yaml(GQA_BLOCK.format(mode="train"))
    backward = [s for s in _shapes(net) if s[1] != "forward"]
    assert backward == [
        ("b.ffn_down", "backward-data", 1024, 14336, 4096, 1),
        ("b.ffn_down", "backward-weight", 14336, 4096, 1024, 1),
        ("b.ffn_up", "backward-data", 1024, 4096, 28672, 1),
        ("b.ffn_up", "backward-weight", 4096, 28672, 1024, 1),
        ("b.proj", "backward-data", 1024, 4096, 4096, 1),
        ("b.proj", "backward-weight", 4096, 4096, 1024, 1),
        ("b.context", "backward-data", 512, 512, 128, 64),   # dP = dO . V^T
        ("b.context", "backward-data", 512, 128, 512, 64),   # dV = P^T . dO
        ("b.scores", "backward-data", 512, 128, 512, 64),    # dQ = dS . K
        ("b.scores", "backward-data", 512, 128, 512, 64),    # dK = dS^T . Q
        ("b.qkv", "backward-weight", 4096, 6144, 1024, 1),
    ]


@pytest.mark.parametrize("b, s, layers, h, vocab", [(2, 512, 3, 256, 1000), (1, 1024, 2, 512, 5000)])
def test_training_gemm_flops_equal_megatron_formula(b, s, layers, h, vocab):
    # Narayanan et al. (2021): 72 B s L h^2 (1 + s/(6h) + V/(12 h L)) for naive attention,
    # kv_heads = heads, ffn = 4h, an embedding before the blocks and a final linear to V
    text = f"""
batch: {b}
seq: {s}
dtype: fp16
layers:
  - {{type: embedding, vocab: {vocab}, dim: {h}}}
  - {{type: transformer, hidden: {h}, heads: 8, attention: naive, repeat: {layers}}}
  - {{type: linear, in: {h}, out: {vocab}}}
"""
    net = network_from_yaml(text)
    total = sum(g.flops for g in net.gemms())
    # 72 B s L h^2 + 72 B s L h^2 s/(6h) + 72 B s L h^2 V/(12 h L) = 72BsLh^2 + 12BLs^2h + 6BshV
    megatron = 72 * b * s * layers * h * h + 12 * b * layers * s * s * h + 6 * b * s * h * vocab
    assert total == megatron


@pytest.mark.parametrize("config, parameters", [
    ("llama-2-7b.json", 6_738_415_616),    # Llama-2-7B, as published
    ("mistral-7b.json", 7_241_732_096),    # Mistral-7B-v0.1, as published
    ("mixtral-8x7b.json", 46_702_792_704),  # Mixtral-8x7B-v0.1 (46.7 B)
    ("qwen2-7b.json", 7_615_616_512),      # Qwen2-7B (7.6 B, with the QKV bias)
    ("gpt2.json", 124_439_808),            # GPT2LMHeadModel (tied output)
    ("bert-base-uncased.json", 109_514_298),  # BertForMaskedLM
    # Llama-3.1-405B: the Llama 3 paper's Table 3 (126 layers, 16384 wide, FFN 53248, 128
    # heads, 8 KV heads) and Hugging Face's vocabulary of 128256; published 405,853,388,800
    ("llama-3.1-405b.json", 405_853_388_800),
])
def test_parameter_counts_from_hugging_face_configs(config, parameters):
    net = load_network(HF / config).with_overrides(batch=1, seq=128, dtype="fp16")
    assert net.parameters == parameters
    report = analyze_model(net, "h100")
    assert report.totals["parameters"] == parameters


def test_llama_3_1_405b_parameters_by_hand():
    # embed and untied lm_head 128256 x 16384 = 2,101,346,304 each; per block: q and o
    # 16384^2 = 268,435,456 each, k and v 16384 x 1024 = 16,777,216 each, gated FFN 3 x 16384
    # x 53248 = 2,617,245,696, 2 rmsnorms 32,768: 3,187,703,808; x 126; final norm 16384
    assert (2 * 2_101_346_304 + 126 * (2 * 268_435_456 + 2 * 16_777_216 + 2_617_245_696
                                       + 32_768) + 16_384) == 405_853_388_800


def test_llama_2_7b_parameters_by_hand():
    # embed 32000 x 4096 = 131,072,000; per block: qkv 4096 x 12288 + proj 4096^2 +
    # gated up 4096 x 22016 + down 11008 x 4096 + 2 rmsnorm x 4096 = 202,383,360; x 32;
    # final norm 4096; untied lm_head 131,072,000
    assert 131_072_000 + 32 * 202_383_360 + 4096 + 131_072_000 == 6_738_415_616


def test_decode_weight_gemms_have_intensity_near_2_batch_over_e():
    # decode: M = batch; I = 2 B N K / (e (B K + K N + B N)) -> 2 B / e when N, K >> B
    for batch in (1, 8, 32):
        net = load_network(HF / "llama-2-7b.json").with_overrides(
            batch=batch, seq=1024, mode="inference", phase="decode")
        qkv = net.gemms()[0]
        assert (qkv.m, qkv.n, qkv.k) == (batch, 12288, 4096)
        assert qkv.intensity == pytest.approx(2 * batch / 2, rel=0.02)


def test_decode_reads_the_kv_cache():
    # flash decode on Mistral-7B (kv_heads 8, head_dim 128), batch 4, cache 2048 fp16:
    # Q and O: 4 x 4096 x 2 B each; K and V cache: 4 x 2048 x 1024 x 2 B each
    net = load_network(HF / "mistral-7b.json").with_overrides(
        batch=4, seq=2048, dtype="fp16", mode="inference", phase="decode")
    attention = next(op for op in net.ops() if op.kind == "flash-attention")
    assert attention.bytes == 2 * (2 * 4 * 4096 + 2 * 4 * 2048 * 1024)
    # 4 x G (4 x 32 heads) x 1 query x 2048 keys x 128: no causal halving in decode
    assert attention.flops == 4 * 4 * 32 * 1 * 2048 * 128


def test_flash_attention_keeps_no_seq_by_seq_matrix_and_causal_halves_it():
    base = ("batch: 1\nseq: 4096\ndtype: fp16\nmode: inference\nlayers:\n"
            "  - {type: transformer, hidden: 1024, heads: 8, causal: %s}\n")
    full = network_from_yaml(base % "false").ops()
    causal = network_from_yaml(base % "true").ops()
    (flash,) = [op for op in full if op.kind == "flash-attention"]
    (half,) = [op for op in causal if op.kind == "flash-attention"]
    # 4 x 8 heads x 4096 x 4096 x 128 FLOPs; bytes: Q, K, V, O of 4096 x 1024 fp16, far below
    # the 8 heads x 4096 x 4096 fp16 scores a naive kernel writes
    assert flash.flops == 4 * 8 * 4096 * 4096 * 128 == 2 * half.flops
    assert flash.bytes == 4 * 4096 * 1024 * 2 < 8 * 4096 * 4096 * 2


def test_nvidia_op_intensities():
    # NVIDIA GPU Performance Background: ReLU 0.25 FLOP/B and layer normalization < 10 (fp16)
    relu = elementwise("x", "forward", "relu", 1_000_000, 2)
    assert relu.flops / relu.bytes == pytest.approx(0.25)
    norm = elementwise("x", "forward", "layernorm", 1_000_000, 2)
    assert norm.flops / norm.bytes < 10


def test_mixture_of_experts_token_counts():
    # Mixtral: 8 experts, top 2; T = 4 x 512 = 2048 tokens -> each expert ceil(2048 x 2 / 8) = 512
    net = load_network(HF / "mixtral-8x7b.json").with_overrides(batch=4, seq=512,
                                                                  mode="inference")
    experts = [g for g in net.gemms()[:8] if g.layer.endswith("expert_up")]
    (up,) = experts
    assert (up.m, up.n, up.k, up.batch_count) == (512, 2 * 14336, 4096, 8)


@pytest.mark.parametrize("batch, active, rows", [(1, 2, 1), (2, 4, 1), (3, 6, 1), (4, 8, 1),
                                                  (5, 8, 2)])
def test_a_decode_step_runs_only_the_experts_its_tokens_are_routed_to(batch, active, rows):
    # Mixtral decode: T = batch tokens, 2 experts each. At batch 1 the 2 routed experts run
    # (their weights read); T x 2 < 8 experts: T x 2 experts of one token; from batch 4 all 8,
    # ceil(2T / 8) tokens each. Until 0.9.0 every expert ran at every batch: a batch-1 decode
    # read all 8 experts' weights, 3.6x the bytes
    net = load_network(HF / "mixtral-8x7b.json").with_overrides(
        batch=batch, seq=4096, mode="inference", phase="decode")
    up = next(g for g in net.gemms() if g.layer.endswith("expert_up"))
    down = next(g for g in net.gemms() if g.layer.endswith("expert_down"))
    assert (up.m, up.n, up.k, up.batch_count) == (rows, 2 * 14336, 4096, active)
    assert (down.m, down.n, down.k, down.batch_count) == (rows, 4096, 14336, active)


@pytest.mark.parametrize("batch, said", [(1, None), (2, "over 4 of its 8 experts"),
                                         (4, "reach 5.47 on average"), (16, None)])
def test_a_decode_step_says_its_experts_are_the_even_spreads(invoke, batch, said):
    """The even spread reaches min(8, 2T) of Mixtral's 8 experts; each token's 2 drawn
    uniformly and independently reach 8 (1 - (1 - 2/8)^T) on average: T = 1: 2 (the same),
    T = 2: 8 (1 - 0.5625) = 3.5 of 4, T = 4: 8 (1 - 0.3164) = 5.47 of 8, T = 16: 8 (1 -
    0.0100) = 7.92 of 8. The note is said where the two are half an expert or more apart."""
    out = invoke("analyze", str(HF / "mixtral-8x7b.json"), "--hw", "h200", "--batch", str(batch),
                 "--seq", "4096", "--mode", "inference", "--phase", "decode").stdout
    text = " ".join(out.split())
    assert ("experts: blk.1's" in text) == (said is not None)
    if said:
        assert said in text and "the roof and the prediction are the even spread's" in text


def test_mixtral_decode_at_batch_1_by_hand():
    # one token through 32 blocks: qkv 4096 x 6144, proj 4096 x 4096, router 4096 x 8, and two
    # experts of 3 x 4096 x 14336 (gate, up, down); then the logits, 4096 x 32000. GEMM FLOPs 2
    # per weight; every weight is read once in fp16 (2 B), the token's activations beside them
    net = load_network(HF / "mixtral-8x7b.json").with_overrides(
        batch=1, seq=4096, mode="inference", phase="decode")
    per_block = 4096 * 6144 + 4096 * 4096 + 4096 * 8 + 2 * 3 * 4096 * 14336
    weights = 32 * per_block + 4096 * 32000
    gemms = net.gemms()
    assert sum(g.flops for g in gemms) == 2 * weights
    weight_bytes = sum(g.k * g.n * 2 * g.batch_count for g in gemms)
    assert weight_bytes == 2 * weights


def test_mixtral_runs_12_9_billion_of_its_46_7_billion_parameters_a_token(invoke):
    """Mistral's announcement: "46.7B total parameters but only uses 12.9B parameters per
    token" (mistral.ai/news/mixtral-of-experts). By hand: a token skips 6 of 8 experts in each
    of 32 blocks, 3 x 4096 x 14336 weights each (no biases)."""
    net = load_network(HF / "mixtral-8x7b.json")
    assert net.parameters == 46_702_792_704
    assert net.active_parameters == 46_702_792_704 - 32 * 6 * 3 * 4096 * 14336 == 12_879_925_248
    dense = load_network(HF / "mistral-7b.json")
    assert dense.active_parameters == dense.parameters == 7_241_732_096
    out = invoke("analyze", HF / "mixtral-8x7b.json", "--hw", "h200", "--mode", "inference",
                 "--phase", "decode", "--batch", "1", "--seq", "4096", "--dtype", "fp16")
    assert "46.7 G parameters (12.9 G active a token: the experts it is not routed to left " \
           "out)" in " ".join(out.output.split())
    data = json.loads(invoke("analyze", HF / "mixtral-8x7b.json", "--hw", "h200", "--mode",
                             "inference", "--phase", "decode", "--batch", "1", "--seq", "4096",
                             "--dtype", "fp16", "--format", "json").output)
    assert data["totals"]["active_parameters"] == 12_879_925_248


def test_embedding_makes_every_later_layer_compute_its_data_gradient():
    net = network_from_yaml("batch: 2\nseq: 8\ndtype: fp16\nlayers:\n"
                            "  - {type: embedding, vocab: 100, dim: 64}\n"
                            "  - {type: linear, in: 64, out: 64}\n")
    assert [g.pass_ for g in net.gemms()] == ["forward", "backward-data", "backward-weight"]
    kinds = [op.kind for op in net.ops()]
    assert kinds == ["embedding-gather", "embedding-scatter-add"]


def test_optimizer_update_counts_every_parameter():
    # Adam on fp32 master weights: 28 bytes per parameter (read w, g, m, v; write w, m, v)
    net = network_from_yaml("batch: 8\ndtype: fp32\noptimizer: adam\nmlp: [100, 10]")
    (update,) = net.ops()
    assert (update.kind, update.bytes) == ("adam-update", 28 * 1000)


def test_a_transformer_needs_seq(tmp_path, invoke):
    model = tmp_path / "m.yaml"
    model.write_text("batch: 1\ndtype: fp16\nlayers:\n  - {type: transformer, hidden: 64, heads: 4}\n")
    result = invoke("analyze", model, "--hw", "h100")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {model}: seq: missing required field: layer 'block1' needs tokens per sample "
        f"(give seq in the model or --seq)")
    assert invoke("analyze", model, "--hw", "h100", "--seq", "16").exit_code == 0


def test_a_config_without_batch_names_the_option(invoke):
    result = invoke("analyze", HF / "gpt2.json", "--hw", "h100", "--seq", "128", "--dtype",
                    "fp16")
    assert result.exit_code == 2
    assert "gpt2.json: batch: missing required field (give batch in the model or --batch)" in (
        result.stderr)


def test_unknown_model_type_lists_the_supported_ones(tmp_path, invoke):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "t5", "d_model": 512}))
    result = invoke("analyze", config, "--hw", "h100", "--batch", "1", "--seq", "8")
    assert result.exit_code == 2
    assert "model_type: unsupported model_type 't5' (supported: llama, mistral, qwen2" in (
        result.stderr)


def test_bad_transformer_fields():
    with pytest.raises(InputError, match=r"layers\[0\].kv_heads: expected a divisor of heads"):
        network_from_yaml("batch: 1\nseq: 8\ndtype: fp16\nlayers:\n"
                          "  - {type: transformer, hidden: 64, heads: 4, kv_heads: 3}\n")
    with pytest.raises(InputError, match=r"layers\[1\].in: layer 'fc2' takes 32 inputs but the previous"):
        network_from_yaml("batch: 1\ndtype: fp16\nlayers:\n  - {type: linear, in: 8, out: 16}\n"
                          "  - {type: linear, in: 32, out: 8}\n")


def test_table_groups_repeated_blocks_and_expand_shows_them(invoke):
    args = ("analyze", HF / "gpt2.json", "--hw", "a100", "--batch", "4", "--seq", "256",
            "--dtype", "fp16")
    table = invoke(*args).stdout
    assert "blk.1.qkv" in table and "blk.2.qkv" not in table
    assert "11 repeated layer copies" in table
    expanded = invoke(*args, "--expand").stdout
    assert "blk.12.qkv" in expanded and "repeated layer copies" not in expanded
    only = invoke(*args, "--gemms-only").stdout
    assert "non-GEMM ops" not in only and "non-GEMM ops" in table
    data = json.loads(invoke(*args, "--format", "json").stdout)
    # every copy in JSON: blk.12.qkv forward, data and weight gradient (the embedding has weights)
    assert sum(g["layer"] == "blk.12.qkv" for g in data["gemms"]) == 3
    assert {"gemm_flops", "gemm_time_s", "op_time_s", "parameters"} <= set(data["totals"])
    assert data["totals"]["time_s"] == pytest.approx(data["totals"]["gemm_time_s"]
                                                     + data["totals"]["op_time_s"])


def test_naive_gqa_attention_reads_k_and_v_once_per_kv_head():
    """Llama-like block (32 query heads, 8 KV heads, head_dim 128), decode at batch 1 with a
    1024-token cache, fp16. By hand, scores = Q . K^T over 32 batched GEMMs: Q 32 x 1 x 128,
    K shared by groups of 4 heads, 8 x 1024 x 128, S 32 x 1 x 1024 elements:
    (4,096 + 1,048,576 + 32,768) x 2 B = 2,170,880 B (K counted per query head was 4x).
    context = P . V: (32,768 + 1,048,576 + 4,096) x 2 B, the same. With kv_heads = heads the
    matrices are the tensors: 2 x (4,096 + 4,194,304 + 32,768) B."""
    from roofline.model.network import network_from_yaml

    def attention(kv_heads: int) -> dict[str, int]:
        net = network_from_yaml(
            f"batch: 1\nseq: 1024\ndtype: fp16\nmode: inference\nphase: decode\nlayers:\n"
            f"  - {{type: transformer, hidden: 4096, heads: 32, kv_heads: {kv_heads}, "
            f"causal: true, attention: naive}}\n")
        return {g.layer.rsplit(".", 1)[1]: g.bytes for g in net.gemms()
                if g.layer.endswith((".scores", ".context"))}

    assert attention(8) == {"scores": 2_170_880, "context": 2_170_880}
    assert attention(32) == {"scores": 2 * (4_096 + 4_194_304 + 32_768),
                             "context": 2 * (4_096 + 4_194_304 + 32_768)}


def test_naive_gqa_training_bytes_by_hand():
    """Prefill/training shapes, batch 2, seq 16, 4 heads sharing 2 KV heads, head_dim 8, fp32:
    G = 8 query-head GEMMs, Gkv = 4. Forward scores: Q 8x16x8 + K 4x16x8 + S 8x16x16 =
    1,024 + 512 + 2,048 elements; dQ = dS.K: dS 2,048 + K 512 + dQ 1,024; dK = dS^T.Q:
    dS 2,048 + Q 1,024 + dK 512."""
    from roofline.model.network import network_from_yaml

    net = network_from_yaml(
        "batch: 2\nseq: 16\ndtype: fp32\nmode: train\nlayers:\n"
        "  - {type: embedding, vocab: 64, dim: 32}\n"
        "  - {type: transformer, hidden: 32, heads: 4, kv_heads: 2, attention: naive}\n")
    scores = [g for g in net.gemms() if g.layer.endswith(".scores")]
    forward = next(g for g in scores if g.pass_ == "forward")
    assert forward.bytes_by_operand == {"a": 1_024 * 4, "b": 512 * 4, "c": 2_048 * 4}
    d_q, d_k = [g for g in scores if g.pass_ == "backward-data"]  # dQ = dS.K, dK = dS^T.Q
    assert d_q.bytes_by_operand == {"a": 2_048 * 4, "b": 512 * 4, "c": 1_024 * 4}
    assert d_k.bytes_by_operand == {"a": 2_048 * 4, "b": 1_024 * 4, "c": 512 * 4}



def test_naive_attentions_operands_run_where_torch_keeps_them():
    """Q, K, V, O and their gradients are (tokens x head_dim) row-major, S and P (queries x
    keys): S = Q K^T reads both along head_dim (K), O = P V reads V along head_dim (N), and in
    the backward dP = dO V^T (both along K), dV = P^T dO (P^T along M), dQ = dS K (K along N),
    dK = dS^T Q (dS^T along M); ``Gemm.rows`` gives (A, B, C), 0 M, 1 N, 2 K."""
    from roofline.analysis.alignment import strided_operands

    net = network_from_yaml("batch: 1\nseq: 64\ndtype: tf32\nmode: train\nlayers:\n"
                            "  - {type: transformer, hidden: 64, heads: 2, attention: naive}\n")
    attention = [(g.layer.split(".")[-1], g.pass_, g.operand_rows, strided_operands(g))
                 for g in net.gemms() if g.layer.endswith((".scores", ".context"))]
    assert attention == [
        ("scores", "forward", (2, 2, 1), 0), ("context", "forward", (2, 1, 1), 1),
        ("context", "backward-data", (2, 2, 1), 0), ("context", "backward-data", (0, 1, 1), 2),
        ("scores", "backward-data", (2, 1, 1), 1), ("scores", "backward-data", (0, 1, 1), 2)]

WINDOW_BLOCK = """
batch: 1
seq: {seq}
dtype: bf16
mode: inference
phase: {phase}
layers:
  - {{type: transformer, hidden: 4096, heads: 32, kv_heads: 8, ffn: 14336, gated: true,
     causal: true, window: 4096, attention: {attention}, name: b}}
"""


def _attention_op(seq, phase, attention="flash"):
    net = network_from_yaml(WINDOW_BLOCK.format(seq=seq, phase=phase, attention=attention))
    (op,) = [o for o in net.ops() if o.kind == "flash-attention"]
    return net, op


def test_a_sliding_window_does_and_keeps_only_the_window():
    # Mistral 7B's attention (32 heads of 128, 8 KV heads, window 4096), bf16, batch 1.
    # Prefill at 8192: the causal band of width 4096 holds 8192 x 4096 - 4096^2 / 2 =
    # 25,165,824 (query, key) pairs (the full causal triangle 8192^2 / 2 = 33,554,432):
    # 4 x 32 x 128 x 25,165,824 = 412,316,860,416 FLOPs; Q, K, V read and O written once:
    # (8192 x 2 x 4096 + 8192 x 2 x 1024) x 2 B = 167,772,160 B
    _, op = _attention_op(8192, "prefill")
    assert op.flops == 412_316_860_416
    assert op.bytes == 167_772_160
    # up to the window nothing changes: 4096^2 / 2 pairs, 4 x 32 x 128 x 8,388,608
    assert _attention_op(4096, "prefill")[1].flops == 137_438_953_472
    # decode at a KV cache of 8192: the query reads the last 4096 keys, 4 x 32 x 128 x 4096 =
    # 67,108,864 FLOPs; bytes Q and O 2 x 4096 x 2 B, K and V 4096 x 2 x 1024 x 2 B:
    # 16,384 + 16,777,216 = 16,793,600 B; and the cache keeps 4096 tokens per layer:
    # 2 x 1024 x 4096 x 2 B = 16,777,216 B
    net, op = _attention_op(8192, "decode")
    assert (op.flops, op.bytes) == (67_108_864, 16_793_600)
    assert (op.attention.q, op.attention.s, op.attention.causal) == (1, 4096, False)
    report = analyze_model(net, "h100")
    assert report.memory.parts["kv_cache"] == 16_777_216
    # naive attention computes the masked scores whole and keeps every token (torch's eager)
    naive = network_from_yaml(WINDOW_BLOCK.format(seq=8192, phase="decode", attention="naive"))
    scores = [g for g in naive.gemms() if g.layer == "b.scores"]
    assert [(g.m, g.n, g.k) for g in scores] == [(1, 8192, 128)]
    # 2 x 1024 x 8192 x 2 B
    assert analyze_model(naive, "h100").memory.parts["kv_cache"] == 33_554_432


def test_a_window_needs_causal_attention():
    text = WINDOW_BLOCK.format(seq=64, phase="prefill", attention="flash").replace(
        "causal: true", "causal: false")
    with pytest.raises(InputError, match="window: a sliding window needs causal: true"):
        network_from_yaml(text)


def test_mistrals_sliding_window_is_the_blocks_window():
    net = load_network(HF / "mistral-7b.json")
    (block,) = {layer.window for layer in net.layers if hasattr(layer, "window")}
    assert block == 4096
    assert net.unmodelled == ()
