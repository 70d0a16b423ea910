"""DeepSeek-V3 (model_type deepseek_v3; examples/hf/deepseek-v3.json, sourced in
examples/hf/SOURCES.md) against the figures DeepSeek publishes and against shapes and bytes worked
by hand: multi-head latent attention (the transformer block's MLA fields, ``layers.mla``), the
shared expert (``shared_ffn``), the first dense blocks.

Published figures. DeepSeek-V3 Technical Report (arXiv 2412.19437), abstract: "671B total
parameters with 37B activated for each token". README_WEIGHTS.md of the model repositories
(huggingface.co/deepseek-ai/DeepSeek-V3-Base): Main Model Weights "Total parameters: 671B",
"Activation parameters: 36.6B (including 0.9B for the output Head)", i.e. without the token
embedding, which a token gathers one row of; the Multi-Token Prediction module apart, "11.5B
unique parameters" (layer 61 of the checkpoint: transformers' DeepseekV3Model ignores
``model.layers.61.*`` on load), which the model card's 685B on Hugging Face adds (671B main +
14B MTP, that module stored with its own copies of the embedding and head). So the 671B is the
main model without MTP, and roofline counts exactly that: the embedding, 61 blocks, the final
norm, the output layer; the MTP module is left out, said as a warning.

The per-block counts, as transformers' DeepseekV3Attention / DeepseekV3MoE / DeepseekV3MLP build
them (h = 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, nope 128, rope 64, v 128):
q_a_proj h x 1536 = 11,010,048 and its norm 1,536; q_b_proj 1536 x 128 x 192 = 37,748,736;
kv_a_proj_with_mqa h x 576 = 4,128,768 and its norm 512; kv_b_proj 512 x 128 x 256 = 16,777,216;
o_proj 128 x 128 x h = 117,440,512: attention 187,107,328. Two block norms 2h = 14,336. A dense
MLP 3 x h x 18432 = 396,361,728. An expert 3 x h x 2048 = 44,040,192; 256 of them
11,274,289,152; the shared expert (1 x 2048 wide) another 44,040,192; the router 256 x h =
1,835,008 (``e_score_correction_bias`` is a buffer, not a parameter).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import load_network, network_from_yaml
from roofline.api import analyze_model
from roofline.errors import InputError
from roofline.model.hf import model_from_config

HF = Path(__file__).parent.parent / "examples" / "hf"

H100 = "h100-sxm5-80gb"
V3 = HF / "deepseek-v3.json"
VOCAB, HIDDEN = 129280, 7168
ATTENTION = 11_010_048 + 1_536 + 37_748_736 + 4_128_768 + 512 + 16_777_216 + 117_440_512
EXPERT = 3 * HIDDEN * 2048
DENSE_BLOCK = ATTENTION + 2 * HIDDEN + 3 * HIDDEN * 18432
MOE_BLOCK = ATTENTION + 2 * HIDDEN + 256 * EXPERT + EXPERT + 256 * HIDDEN


def test_the_blocks_by_hand():
    assert ATTENTION == 187_107_328 and EXPERT == 44_040_192
    assert DENSE_BLOCK == 187_107_328 + 14_336 + 396_361_728 == 583_483_392
    assert MOE_BLOCK == 187_107_328 + 14_336 + 11_274_289_152 + 44_040_192 + 1_835_008
    assert MOE_BLOCK == 11_507_286_016


def test_parameters_are_the_published_671b_and_37b():
    net = load_network(V3)
    embedding = VOCAB * HIDDEN  # 926,679,040; the output layer (untied) the same
    # 2 x 926,679,040 + 7,168 (final norm) + 3 x 583,483,392 + 58 x 11,507,286,016
    assert net.parameters == 2 * embedding + HIDDEN + 3 * DENSE_BLOCK + 58 * MOE_BLOCK
    assert net.parameters == 671_026_404_352 and round(net.parameters / 1e9) == 671
    # active: each sparse block runs 8 of its 256 routed experts (and the shared one): 248
    # experts a block left out, 58 x 248 x 44,040,192 = 633,473,721,728 fewer
    assert net.active_parameters == net.parameters - 58 * 248 * EXPERT == 37_552_282_624
    # README_WEIGHTS' 36.6B leaves out the embedding (it counts the output head):
    # 37,552,282,624 - 926,679,040 = 36,625,603,584; the report's headline "37B" is the
    # 37.55B with it, to two digits
    assert f"{(net.active_parameters - embedding) / 1e9:.1f}" == "36.6"
    assert int(net.active_parameters / 1e9) == 37
    assert analyze_model(V3, H100, batch=1, seq=16, mode="inference").totals[
        "parameters"] == net.parameters


def test_the_layers_first_dense_then_sparse():
    model = model_from_config(json.loads(V3.read_text()), str(V3))
    blocks = [layer for layer in model["layers"] if layer["type"] == "transformer"]
    assert [(b["name"], b["repeat"], b["ffn"], b.get("experts"), b.get("top_k"),
             b.get("shared_ffn")) for b in blocks] == [
        ("blk", 3, 18432, None, None, None), ("moe_blk", 58, 2048, 256, 8, 2048)]
    for b in blocks:
        assert (b["q_lora_rank"], b["kv_lora_rank"], b["qk_nope_head_dim"],
                b["qk_rope_head_dim"], b["v_head_dim"]) == (1536, 512, 128, 64, 128)
    assert [layer["name"] for layer in model["layers"]] == [
        "embed_tokens", "blk", "moe_blk", "norm", "lm_head"]
    assert model["context"] == 163840 and model["dtype"] == "bf16"
    # the MTP module and the FP8 checkpoint said; the keys the adapter models not
    assert [key for key, _ in model.unmodelled] == ["quantization_config",
                                                   "num_nextn_predict_layers"]


def _config(tmp_path, **changes):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(json.loads(V3.read_text()) | changes))
    return path


def test_variants_of_the_config(tmp_path):
    # no dense blocks: every block sparse; all dense: no sparse run
    none = load_network(_config(tmp_path, first_k_dense_replace=0))
    assert [(r.layer.name, r.count) for r in none.layer_runs][1:3] == [("moe_blk", 61),
                                                                       ("norm", 1)]
    dense = load_network(_config(tmp_path, first_k_dense_replace=61))
    assert dense.parameters == 2 * VOCAB * HIDDEN + HIDDEN + 61 * DENSE_BLOCK
    # no shared expert: 58 x 44,040,192 fewer
    plain = load_network(_config(tmp_path, n_shared_experts=0))
    assert load_network(V3).parameters - plain.parameters == 58 * EXPERT
    # q_lora_rank null (DeepSeek-V2-Lite's): one q projection h x 128 x 192, no q norm
    full_q = load_network(_config(tmp_path, q_lora_rank=None))
    assert load_network(V3).parameters - full_q.parameters == 61 * (
        11_010_048 + 1_536 + 37_748_736 - HIDDEN * 128 * 192)
    gemms = [(g.layer, g.n, g.k) for g in full_q.with_overrides(
        batch=1, seq=4, mode="inference").gemms() if g.layer.startswith("blk.1.")]
    assert gemms[:3] == [("blk.1.q", 128 * 192, HIDDEN), ("blk.1.kv_a", 576, HIDDEN),
                         ("blk.1.kv_b", 128 * 256, 512)]


def test_config_refusals(tmp_path):
    with pytest.raises(InputError, match=r"moe_layer_freq: expected 1 .*got 2"):
        load_network(_config(tmp_path, moe_layer_freq=2))
    with pytest.raises(InputError, match=r"first_k_dense_replace: expected a non-negative "):
        load_network(_config(tmp_path, first_k_dense_replace=-1))
    with pytest.raises(InputError, match=r"ds.json: kv_lora_rank: "):
        load_network(_config(tmp_path, kv_lora_rank=0))


def _block(net, prefix="blk.1"):
    gemms = [(g.layer, g.m, g.n, g.k, g.batch_count) for g in net.gemms()
             if g.pass_ == "forward" and g.layer.startswith(prefix + ".")]
    ops = [(o.layer, o.kind, o.flops, o.bytes) for o in net.ops()
           if o.pass_ == "forward" and (o.layer == prefix or o.layer.startswith(prefix + "."))]
    return gemms, ops


def test_one_mla_block_in_a_prefill_by_hand():
    """Prefill at batch 2, seq 16, bf16: T = 32 tokens. GEMMs (M x N x K): qkv_a (q_a_proj
    and kv_a_proj_with_mqa as vLLM's fused_qkv_a_proj) T x (1536 + 512 + 64) x 7168; q_b T x
    128 x 192 x 1536; kv_b T x 128 x (128 + 128) x 512; proj T x 7168 x 128 x 128; the dense
    gated MLP T x 2 x 18432 x 7168 and T x 7168 x 18432. Ops: norm1 over T h; the q latent's
    RMSNorm on T x 1536 and the kv latent's on T x 512 (4 FLOPs a value, read and written at 2
    bytes); the rotary embedding on the 128 heads' q_pe and the one k_pe, T x 129 x 64 =
    264,192 values (3 FLOPs each); the cache write of T x 576 values (read and written, 2
    bytes each: 73,728 bytes); flash attention over G = 2 x 128 heads, causal, 16 x 16 / 2 =
    128 pairs each: 2 x 256 x 128 x (192 + 128) = 20,971,520 FLOPs, its bytes Q and O (T x 128
    x (192 + 128)) and K and V (the same) at 2 bytes: 5,242,880."""
    net = load_network(V3).with_overrides(batch=2, seq=16, mode="inference")
    gemms, ops = _block(net)
    assert gemms == [("blk.1.qkv_a", 32, 2112, 7168, 1), ("blk.1.q_b", 32, 24576, 1536, 1),
                     ("blk.1.kv_b", 32, 32768, 512, 1), ("blk.1.proj", 32, 7168, 16384, 1),
                     ("blk.1.ffn_up", 32, 36864, 7168, 1),
                     ("blk.1.ffn_down", 32, 7168, 18432, 1)]
    assert ops[:6] == [
        ("blk.1", "rmsnorm", 4 * 32 * 7168, 2 * 2 * 32 * 7168),
        ("blk.1.q_a", "rmsnorm", 4 * 32 * 1536, 2 * 2 * 32 * 1536),
        ("blk.1.kv_a", "rmsnorm", 4 * 32 * 512, 2 * 2 * 32 * 512),
        ("blk.1.attn", "rotary", 3 * 264_192, 2 * 2 * 264_192),
        ("blk.1.attn", "kv-cache-write", 0, 73_728),
        ("blk.1.attn", "flash-attention", 20_971_520, 5_242_880)]


def test_one_mla_block_in_a_decode_step_absorbed_by_hand():
    """Decode at batch 2 against 16 cached tokens, bf16: T = 2. vLLM's absorbed form
    (vllm/v1/attention/backends/mla/common.py, MLACommonImpl.forward's decode branch): qkv_a and
    q_b as in a prefill, no kv_b; W_UK folded into the query, 128 batched 2 x 512 x 128
    (``torch.bmm(decode_q_nope, self.W_UK_T)``); attention as MQA over the latent cache, query
    and key head dim 512 + 64 = 576, value head dim 512: 2 x 256 heads x 16 keys x (576 + 512) =
    8,912,896 FLOPs; bytes: Q 2 x 128 x 576 and O 2 x 128 x 512 at 2 bytes (557,056) and the
    cache's 2 x 16 x 576 values once (36,864): 593,920; then W_UV, 128 batched 2 x 128 x 512
    (``_v_up_proj``), and o_proj."""
    net = load_network(V3).with_overrides(batch=2, seq=16, mode="inference", phase="decode")
    gemms, ops = _block(net)
    assert gemms[:5] == [("blk.1.qkv_a", 2, 2112, 7168, 1), ("blk.1.q_b", 2, 24576, 1536, 1),
                         ("blk.1.k_up", 2, 512, 128, 128), ("blk.1.v_up", 2, 128, 512, 128),
                         ("blk.1.proj", 2, 7168, 16384, 1)]
    flash = [op for op in ops if op[1] == "flash-attention"]
    assert flash == [("blk.1.attn", "flash-attention", 8_912_896, 593_920)]
    assert 2 * 2 * 128 * (576 + 512) + 2 * 2 * 16 * 576 == 593_920
    # the KV cache: 61 blocks x 576 values x 2 bytes = 70,272 bytes a token (not 61 x 2 x 128
    # heads x 192 x 2 = 5,996,544 as plain multi-head attention would keep): x 32 tokens
    assert 61 * 576 * 2 == 70_272
    report = analyze_model(V3, H100, batch=2, seq=16, mode="inference", phase="decode")
    assert report.memory.parts["kv_cache"] == 70_272 * 32
    # naive attention: the same products as GEMMs, K and V read once for the 128 heads
    naive = load_network(V3).with_overrides(batch=2, seq=16, mode="inference",
                                            phase="decode", attention="naive")
    scores = [g for g in naive.gemms() if g.layer in ("blk.1.scores", "blk.1.context")]
    assert [(g.m, g.n, g.k, g.batch_count) for g in scores] == [(1, 16, 576, 256),
                                                                (1, 512, 16, 256)]


def test_tp_8_splits_the_heads_and_keeps_the_latent_whole():
    """vLLM at tp 8 (deepseek_v2.py: fused_qkv_a_proj ``disable_tp=True``, q_b_proj and
    kv_b_proj column-parallel, o_proj row-parallel; get_num_kv_heads 1 for MLA): each GPU runs
    16 heads, its qkv_a whole (2112 x 7168), q_b 16 x 192 = 3072 wide, W_UK and W_UV for 16
    heads, proj K 16 x 128 = 2048, the MLP and the shared expert 1/8 wide; and holds the whole
    latent cache, 70,272 bytes a token on every GPU."""
    report = analyze_model(V3, H100, batch=2, seq=16, mode="inference", phase="decode", tp=8)
    shapes = {(g.gemm.layer, g.gemm.m, g.gemm.n, g.gemm.k, g.gemm.batch_count)
              for g in report.results if g.gemm.layer.startswith(("blk.1.", "moe_blk.1."))}
    assert {("blk.1.qkv_a", 2, 2112, 7168, 1), ("blk.1.q_b", 2, 3072, 1536, 1),
            ("blk.1.k_up", 2, 512, 128, 16), ("blk.1.v_up", 2, 128, 512, 16),
            ("blk.1.proj", 2, 7168, 2048, 1), ("blk.1.ffn_up", 2, 4608, 7168, 1),
            ("moe_blk.1.shared_up", 2, 512, 7168, 1),
            ("moe_blk.1.shared_down", 2, 7168, 256, 1)} <= shapes
    assert report.memory.parts["kv_cache"] == 70_272 * 32
    # vLLM's one KV head for MLA, on all 8 GPUs: said in the header, kv_head_replicas 8
    assert report.tensor_parallel.kv_replicas == 8 and report.tensor_parallel.latent
    assert report.tensor_parallel.to_dict()["kv_head_replicas"] == 8
    from roofline.output.serving_tp import replication_text
    assert replication_text(report.tensor_parallel) == (
        "; latent KV cache whole on every GPU: latent attention keeps one latent a token for "
        "all heads, which vLLM does not split (MLA as one KV head), so each GPU's KV cache is "
        "the model's whole, not 1/8")


_MLA = """
batch: 1
seq: 8
dtype: bf16
mode: {mode}
layers:
  - {{type: transformer, name: blk, hidden: 64, heads: 4, ffn: 128, gated: true, causal: true,
     norm: rmsnorm, rotary: true, q_lora_rank: 32, kv_lora_rank: 16, qk_nope_head_dim: 8,
     qk_rope_head_dim: 4, v_head_dim: 8{extra}}}
"""


def test_an_mla_block_in_a_model_file_by_hand():
    """hidden 64, 4 heads, q_lora 32, kv_lora 16, nope 8, rope 4, v 8, gated FFN 128. Parameters:
    q 64 x 32 + 32 x 4 x 12 = 3,584; kv 64 x 20 + 16 x 4 x 16 = 2,304; proj 4 x 8 x 64 = 2,048;
    FFN 3 x 64 x 128 = 24,576; norms 2 x 64 + 32 + 16 = 176: 32,688. Training at batch 1,
    seq 8 (T = 8), the backward GEMMs (M x N x K; data: T x in x out, weight: in x out x T), the
    block first (qkv_a's data gradient not computed): ffn_down, ffn_up, proj (in 32), the
    attention kernel's backward, kv_b (16 -> 64), q_b (32 -> 48), qkv_a (64 -> 52) weight only.
    The kernel's backward: 4 heads x 8 x 8 / 2 causal pairs = 128, 2 x 128 x (3 x 12 + 2 x 8) =
    13,312 FLOPs (S, dQ, dK at 12; dP, dV at 8); bytes Q, O, dO, dQ and K, V, dK, dV at their head
    dims, 2 x (8 x 4 x 20) + 2 x (8 x 4 x 20) = 2,560 values at 2 bytes, and the 4 x 8 fp32
    log-sum-exps: 5,248."""
    net = network_from_yaml(_MLA.format(mode="train", extra=""))
    assert net.parameters == 3_584 + 2_304 + 2_048 + 24_576 + 176 == 32_688
    backward = [(g.layer, g.pass_, g.m, g.n, g.k) for g in net.gemms()
                if g.pass_ != "forward"]
    assert backward == [
        ("blk.ffn_down", "backward-data", 8, 128, 64), ("blk.ffn_down", "backward-weight", 128,
                                                        64, 8),
        ("blk.ffn_up", "backward-data", 8, 64, 256), ("blk.ffn_up", "backward-weight", 64, 256,
                                                      8),
        ("blk.proj", "backward-data", 8, 32, 64), ("blk.proj", "backward-weight", 32, 64, 8),
        ("blk.kv_b", "backward-data", 8, 16, 64), ("blk.kv_b", "backward-weight", 16, 64, 8),
        ("blk.q_b", "backward-data", 8, 32, 48), ("blk.q_b", "backward-weight", 32, 48, 8),
        ("blk.qkv_a", "backward-weight", 64, 52, 8)]
    flash = [(o.flops, o.bytes) for o in net.ops() if o.kind == "flash-attention-backward"]
    assert flash == [(13_312, 5_248)]
    # the KV cache of an inference step: 16 + 4 values a token, 20 x 8 x 2 bytes = 320
    inference = network_from_yaml(_MLA.format(mode="inference", extra=""))
    assert analyze_model(inference, H100).memory.parts["kv_cache"] == 320


@pytest.mark.parametrize("extra, message", [
    (", head_dim: 12", r"layers\[0\].head_dim: not taken by a latent-attention \(MLA\) block"),
    (", window: 4", r"layers\[0\].window: not taken by a latent-attention"),
    (", kv_heads: 2", r"layers\[0\].kv_heads: expected a divisor|kv_heads is heads"),
    (", qk_norm: true", r"layers\[0\].qk_norm: not taken"),
    (", bias: all", r"layers\[0\].bias: not taken"),
])
def test_mla_refusals(extra, message):
    with pytest.raises(InputError, match=message):
        network_from_yaml(_MLA.format(mode="inference", extra=extra))


def test_mla_fields_need_kv_lora_rank():
    text = _MLA.format(mode="inference", extra="").replace("kv_lora_rank: 16, ", "")
    with pytest.raises(InputError, match=r"layers\[0\].q_lora_rank: q_lora_rank is a "
                                         r"latent-attention \(MLA\) field: it needs kv_lora_rank"):
        network_from_yaml(text)


_SHARED = """
batch: 1
seq: 8
dtype: bf16
mode: inference
layers:
  - {{type: transformer, name: blk, hidden: 64, heads: 4, ffn: 32, gated: true, causal: true,
     experts: 4, top_k: 2{extra}}}
"""


def test_a_shared_expert_by_hand():
    """shared_ffn 64 beside 4 experts of 32, top 2, gated: 3 x 64 x 64 = 12,288 weights more,
    all of them active; forward GEMMs shared_up T x 128 x 64 and shared_down T x 64 x 64 (T = 8)
    after the routed experts' combine, its output added (op residual on blk.shared, T h values:
    1 FLOP each, two read and one written at 2 bytes)."""
    plain = network_from_yaml(_SHARED.format(extra=""))
    shared = network_from_yaml(_SHARED.format(extra=", shared_ffn: 64"))
    assert shared.parameters - plain.parameters == 12_288
    assert shared.active_parameters - plain.active_parameters == 12_288
    gemms = [(g.layer, g.m, g.n, g.k) for g in shared.gemms()]
    assert gemms[-2:] == [("blk.shared_up", 8, 128, 64), ("blk.shared_down", 8, 64, 64)]
    add = [(o.kind, o.flops, o.bytes) for o in shared.ops() if o.layer == "blk.shared"]
    assert add[-1] == ("residual", 8 * 64, 3 * 2 * 8 * 64)
    with pytest.raises(InputError, match=r"layers\[0\].shared_ffn: .*needs experts"):
        network_from_yaml(_SHARED.format(extra=", shared_ffn: 64").replace(
            "experts: 4, top_k: 2, ", ""))


def test_what_an_mla_block_keeps_for_training_by_hand():
    """The small block above, training at batch 1, seq 8, bf16 (T = 8, e = 2), flash attention,
    nothing recomputed: the two norms' inputs 2 T h e = 2,048 and qkv_a's input T h e = 1,024;
    the MLA tensors (``mla.kept``): qkv_a's output T (32 + 16 + 4) e = 832, the latent norms'
    outputs T (32 + 16) e = 768, Q, K, V T 4 (12 + 12 + 8) e = 2,048, proj's input T 4 x 8 e =
    512; the FFN's input T h e = 1,024; its inner tensors, gated: T 256 e + T 128 e x 2 = 8,192;
    the log-sum-exps 4 heads x 8 x 4 = 128: 16,576 bytes. Full recomputation keeps the block's
    input, T h e = 1,024."""
    from roofline.model.layers import saved_bytes

    net = network_from_yaml(_MLA.format(mode="train", extra=""))
    block, step = net.layer_runs[0].layer, net.step()
    assert saved_bytes(block, step, "none") == (2_048 + 1_024 + 832 + 768 + 2_048 + 512 + 1_024
                                                + 8_192 + 128) == 16_576
    assert saved_bytes(block, step, "full") == 1_024


def test_keys_left_out_take_transformers_defaults(tmp_path):
    # transformers' DeepseekV3Config.__init__ (configuration_deepseek_v3.py) defaults
    # q_lora_rank=1536, first_k_dense_replace=3, n_shared_experts=1: DeepSeek-V3's own values,
    # which a config without the keys gets in transformers and in vLLM (which reads it through
    # that class). Left out, the model is V3's 671,026,404,352 parameters (the published
    # config's count, by hand in test_parameters_are_the_published_671b_and_37b), not a full
    # q projection (61 x (11,010,048 + 1,536 + 37,748,736 - 7168 x 128 x 192) fewer), no dense
    # block (3 x (11,507,286,016 - 583,483,392) more) or no shared expert (58 x 44,040,192
    # fewer).
    config = json.loads(V3.read_text())
    for key in ("q_lora_rank", "first_k_dense_replace", "n_shared_experts"):
        path = tmp_path / f"without-{key}.json"
        path.write_text(json.dumps({k: v for k, v in config.items() if k != key}))
        assert load_network(path).parameters == 671_026_404_352, key
    # null is not left out: q_lora_rank null is the full projection (transformers' ``is None``),
    # n_shared_experts null no shared expert (vLLM's ``is None``), first_k_dense_replace null
    # refused (both compare it with each layer's index)
    full_q = load_network(_config(tmp_path, q_lora_rank=None))
    assert 671_026_404_352 - full_q.parameters == 61 * (
        11_010_048 + 1_536 + 37_748_736 - HIDDEN * 128 * 192)
    assert 671_026_404_352 - load_network(_config(
        tmp_path, n_shared_experts=None)).parameters == 58 * EXPERT
    with pytest.raises(InputError, match=r"ds.json: first_k_dense_replace: expected a "
                                         r"non-negative integer, got None"):
        load_network(_config(tmp_path, first_k_dense_replace=None))


def test_pipeline_stages_hold_embedding_first_and_head_last(tmp_path):
    # vLLM (vllm/model_executor/models/deepseek_v2.py): DeepseekV2Model builds embed_tokens on
    # the first pipeline rank and norm on the last, DeepseekV2ForCausalLM (DeepseekV3ForCausalLM
    # its subclass) lm_head on the last, every other rank a PPMissingLayer; unlike Mixtral's,
    # whose every rank holds all three. Every block sparse (first_k_dense_replace 0), tp 8, pp
    # 2: 61 blocks split 31 + 30 (get_pp_indices: the remainder to the stage before the last).
    # One GPU's block at tp 8 (h = 7168, 16 heads a GPU): qkv_a whole 7168 x (1536 + 576) =
    # 15,138,816, its two latent norms whole 1,536 + 512, q_b 1536 x 16 x 192 = 4,718,592, kv_b
    # 512 x 16 x 256 = 2,097,152, o_proj 16 x 128 x 7168 = 14,680,064, two block norms 14,336,
    # 256 experts of 3 x 7168 x 2048 / 8 = 1,409,286,144, the shared one 3 x 7168 x 256 =
    # 5,505,024, the router whole 256 x 7168 = 1,835,008: 1,453,277,184. The embedding and head
    # 129,280 / 8 = 16,160 rows x 7168 = 115,834,880 each; the final norm 7,168. bf16: 2 B.
    block = (15_138_816 + 1_536 + 512 + 4_718_592 + 2_097_152 + 14_680_064 + 14_336
             + 1_409_286_144 + 5_505_024 + 1_835_008)
    assert block == 1_453_277_184
    rows = 16_160 * HIDDEN
    report = analyze_model(_config(tmp_path, first_k_dense_replace=0), H100, batch=4, seq=512,
                           tp=8, pp=2, mode="inference", phase="decode")
    assert report.pipeline_parallel.stages.blocks == (31, 30)
    assert [m.parts["weights"] for m in report.pipeline_parallel.stages.memories] == [
        2 * (rows + 31 * block), 2 * (30 * block + HIDDEN + rows)]
    # the latent cache: whole on every GPU of a stage's tp group (vLLM's one KV head for MLA),
    # its stage's blocks only, for the pp = 2 batches in flight: 576 values x 2 B a token and
    # block, 4 x 512 tokens a batch
    assert [m.parts["kv_cache"] for m in report.pipeline_parallel.stages.memories] == [
        blocks * 576 * 2 * 4 * 512 * 2 for blocks in (31, 30)]


def test_decode_at_tp_8_batch_16_over_4096_cached_tokens_by_hand():
    """DeepSeek-V3 decode on 8 H200s, fp8 weights, batch 16, 4096 cached tokens a sequence.
    Per GPU (16 of the 128 heads; the latent cache whole on every GPU, vLLM's one KV head):
    - each block's attention reads the whole latent cache once for its 16 heads: 16 x 4096
      tokens x 576 values x 2 B = 75,497,472 B, plus the absorbed queries 16 x 16 x 576 and
      outputs 16 x 16 x 512 at 2 B (294,912 + 262,144): 76,054,528 B; over 61 blocks the
      cache read a step is 61 x 576 x 2 x 4096 x 16 = 4,605,345,792 B, the cache itself;
      FLOPs 2 x 16 x 16 x 4096 x (576 + 512) = 2,281,701,376 a block (MQA over the latent);
    - W_UK and W_UV per head, 16 batched: k_up 16 x 512 x 128, v_up 16 x 128 x 512;
    - all-reduces: o_proj's and the FFN's (the dense MLP's down_proj, or the routed experts'
      and the shared expert's outputs summed, reduced once: vLLM's DeepseekV2MoE, the shared
      experts with reduce_results=False) in each of the 61 blocks, and the vocabulary-parallel
      embedding's: 2 x 61 + 1 = 123 of 16 x 7168 x 2 = 229,376 B; the logits gathered once,
      16 x 129,280 x 2 = 4,136,960 B."""
    report = analyze_model(V3, "h200", batch=16, seq=4096, mode="inference", phase="decode",
                           tp=8, weights="fp8")
    flash = [r.op for r in report.ops if r.op.kind == "flash-attention"]
    assert len(flash) == 61
    assert {(op.flops, op.bytes) for op in flash} == {(2_281_701_376, 76_054_528)}
    assert 16 * 4096 * 576 * 2 + 16 * 16 * 576 * 2 + 16 * 16 * 512 * 2 == 76_054_528
    cache = 61 * 576 * 2 * 4096 * 16
    assert cache == 4_605_345_792 == report.memory.parts["kv_cache"]
    assert sum(op.bytes - (16 * 16 * 576 + 16 * 16 * 512) * 2 for op in flash) == cache
    shapes = {(r.gemm.layer.split(".", 2)[-1], r.gemm.m, r.gemm.n, r.gemm.k, r.gemm.batch_count)
              for r in report.results if r.gemm.layer.endswith(("k_up", "v_up"))}
    assert shapes == {("k_up", 16, 512, 128, 16), ("v_up", 16, 128, 512, 16)}
    transfers = {t["collective"]: (t["count"], t["bytes"])
                 for t in report.tensor_parallel.to_dict()["step"]["transfers"]}
    assert transfers == {"all-reduce": (2 * 61 + 1, 16 * 7168 * 2),
                         "gather": (1, 16 * 129_280 * 2)}


def test_prefill_attention_flops_by_hand():
    """The fused attention kernel's FLOPs (transformer._flash: 2 per (query, key) pair and head
    dim, over the scores' q/k head dim and the values' v head dim, pairs halved when causal):
    a 4096-token prefill of one sequence, 128 heads, q/k head dim 128 + 64 = 192, v 128:
    2 x 128 x 4096^2 / 2 x (192 + 128) = 687,194,767,360 FLOPs a block; at tp 8, 16 heads a
    GPU, 1/8 of it, 85,899,345,920. Bytes: Q and K 4096 x 128 x 192, V and O 4096 x 128 x 128,
    at 2 B: 671,088,640 (no s x s matrix in memory)."""
    for tp, heads in ((1, 128), (8, 16)):
        report = analyze_model(V3, "h200", batch=1, seq=4096, mode="inference", tp=tp)
        flash = {(r.op.flops, r.op.bytes) for r in report.ops if r.op.kind == "flash-attention"}
        assert flash == {(2 * heads * 4096 * 4096 // 2 * (192 + 128),
                          2 * 4096 * heads * (2 * 192 + 2 * 128))}
    assert 2 * 128 * 4096 * 4096 // 2 * 320 == 687_194_767_360
