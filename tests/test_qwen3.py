"""Qwen3 and Qwen3-MoE configs (model_type qwen3, qwen3_moe; examples/hf/qwen3-*.json, sourced in
examples/hf/SOURCES.md) against the figures Qwen publishes and against shapes and bytes derived by
hand; the transformer block's ``qk_norm`` (Qwen3's q_norm and k_norm) by hand.

Published figures, the model cards' "Model Overview" (huggingface.co/Qwen/<model>, April 2025):
Qwen3-8B "Number of Parameters: 8.2B", "Number of Paramaters (Non-Embedding): 6.95B"; Qwen3-32B
32.8B and 31.2B; Qwen3-30B-A3B "30.5B in total and 3.3B activated", 29.9B non-embedding;
Qwen3-235B-A22B "235B in total and 22B activated", 234B non-embedding. Qwen's non-embedding count
leaves out the token embedding and the (untied) output layer, both vocab x hidden."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline import analyze_model, load_network, network_from_yaml
from roofline.errors import InputError
from roofline.model.hf import model_from_config
from roofline.model.layers import saved_bytes
from roofline.model.network import network_from_dict

HF = Path(__file__).parent.parent / "examples" / "hf"
VOCAB = 151936  # every Qwen3 config's vocab_size


def _block(hidden, heads, kv_heads, ffn, experts=0):
    """One Qwen3 block's parameters by hand (head_dim 128 in every published config): q and o
    hidden x 128 heads each, k and v hidden x 128 kv_heads each, a gated FFN of 3 hidden x ffn
    (gate, up, down) or ``experts`` of them and a hidden x experts router, two RMSNorm scales
    of hidden and the q_norm and k_norm scales of 128 each. No biases."""
    attention = 2 * hidden * 128 * heads + 2 * hidden * 128 * kv_heads
    mlp = 3 * hidden * ffn * max(experts, 1) + hidden * experts
    return attention + mlp + 2 * hidden + 2 * 128


# (config, layers, block by hand, hidden, total, non-embedding, active: each by hand)
CARDS = [
    ("qwen3-8b.json", 36, _block(4096, 32, 8, 12288), 4096),
    ("qwen3-32b.json", 64, _block(5120, 64, 8, 25600), 5120),
    ("qwen3-30b-a3b.json", 48, _block(2048, 32, 4, 768, 128), 2048),
    ("qwen3-235b-a22b.json", 94, _block(4096, 64, 4, 1536, 128), 4096),
]


def test_the_blocks_by_hand():
    # Qwen3-8B: q, o 4096 x 4096 = 16,777,216 each; k, v 4096 x 1024 = 4,194,304 each; FFN 3 x
    # 4096 x 12288 = 150,994,944; norms 2 x 4096 + 2 x 128: 192,946,432
    assert CARDS[0][2] == 2 * 16_777_216 + 2 * 4_194_304 + 150_994_944 + 8192 + 256 == 192_946_432
    # Qwen3-32B (64 heads x 128 = 8192 wide attention on hidden 5120): q, o 5120 x 8192 =
    # 41,943,040 each; k, v 5120 x 1024 = 5,242,880 each; FFN 3 x 5120 x 25600 = 393,216,000
    assert CARDS[1][2] == 2 * 41_943_040 + 2 * 5_242_880 + 393_216_000 + 10240 + 256
    # Qwen3-30B-A3B: attention 2 x 2048 x 4096 + 2 x 2048 x 512 = 18,874,368; 128 experts of 3 x
    # 2048 x 768 = 4,718,592; router 2048 x 128 = 262,144
    assert CARDS[2][2] == 18_874_368 + 128 * 4_718_592 + 262_144 + 4096 + 256 == 623_120_640
    # Qwen3-235B-A22B: attention 2 x 4096 x 8192 + 2 x 4096 x 512 = 71,303,168; 128 experts of
    # 3 x 4096 x 1536 = 18,874,368; router 4096 x 128 = 524,288
    assert CARDS[3][2] == 71_303_168 + 128 * 18_874_368 + 524_288 + 8192 + 256 == 2_487_755_008


@pytest.mark.parametrize("config, layers, block, hidden", CARDS)
def test_parameters_are_the_model_cards(config, layers, block, hidden):
    # total: the blocks, the final norm, the untied embedding and output layer (vocab x hidden
    # each); as transformers 5.24 builds them too (tests/test_capture_hf.py, examples/hf/SOURCES)
    net = load_network(HF / config)
    embedding = VOCAB * hidden
    assert net.parameters == layers * block + hidden + 2 * embedding
    assert analyze_model(net.with_overrides(batch=1, seq=128), "h100").totals[
        "parameters"] == net.parameters


def test_the_published_figures_to_their_precision():
    """The totals above, to the digits each model card gives (module docstring)."""
    counts = {c: load_network(HF / c) for c, *_ in CARDS}
    dense = {"qwen3-8b.json": (4096, "8.2", "6.95"), "qwen3-32b.json": (5120, "32.8", "31.2")}
    for config, (hidden, total, non_embedding) in dense.items():
        net = counts[config]
        assert f"{net.parameters / 1e9:.1f}" == total  # 8,190,735,360; 32,762,123,264
        digits = len(non_embedding.split(".")[1])
        # 6,946,075,648 (6.95B); 31,206,298,624 (31.2B)
        assert f"{(net.parameters - 2 * VOCAB * hidden) / 1e9:.{digits}f}" == non_embedding
        assert net.active_parameters == net.parameters  # dense: a token runs every weight
    a3b, a22b = counts["qwen3-30b-a3b.json"], counts["qwen3-235b-a22b.json"]
    # Qwen3-30B-A3B: 30,532,122,624 total (30.5B); 29,909,792,768 without the embedding and
    # output layer (29.9B); active: the 120 of 128 experts a token skips in each of 48 blocks
    # left out, 30,532,122,624 - 48 x 120 x 4,718,592 = 3,353,032,704: the card's 3.3B is that
    # cut to a decimal, not rounded (3.35); it counts the embedding and the output layer (without
    # the embedding 3.04B, without both 2.73B: neither reads 3.3)
    assert a3b.parameters == 30_532_122_624 and f"{a3b.parameters / 1e9:.1f}" == "30.5"
    assert f"{(a3b.parameters - 2 * VOCAB * 2048) / 1e9:.1f}" == "29.9"
    assert a3b.active_parameters == 30_532_122_624 - 48 * 120 * 4_718_592 == 3_353_032_704
    assert math.floor(a3b.active_parameters / 1e8) / 10 == 3.3
    # Qwen3-235B-A22B: 235,093,634,560 (235B); 233,848,974,848 without embedding and output
    # (234B); active 235,093,634,560 - 94 x 120 x 18,874,368 = 22,190,763,520 (22B)
    assert a22b.parameters == 235_093_634_560 and round(a22b.parameters / 1e9) == 235
    assert round((a22b.parameters - 2 * VOCAB * 4096) / 1e9) == 234
    assert a22b.active_parameters == 235_093_634_560 - 94 * 120 * 18_874_368 == 22_190_763_520
    assert round(a22b.active_parameters / 1e9) == 22


def _items(net, pass_, layer_prefix="blk.1"):
    gemms = [(g.layer, g.m, g.n, g.k) for g in net.gemms()
             if g.pass_ == pass_ and g.layer.startswith(layer_prefix + ".")]
    ops = [(o.layer, o.kind, o.flops, o.bytes) for o in net.ops()
           if o.pass_ == pass_ and (o.layer == layer_prefix or o.layer.startswith(
               layer_prefix + "."))]
    return gemms, ops


def test_one_qwen3_8b_block_by_hand():
    """Qwen3-8B, inference prefill at batch 2, seq 16, bf16 (e = 2): T = 32 tokens, hq = 32 x
    128 = 4096, hkv = 8 x 128 = 1024. GEMMs (M x N x K): qkv T x (4096 + 2 x 1024) x 4096; proj T
    x 4096 x 4096 (K = hq); gated FFN up T x 2 x 12288 x 4096, down T x 4096 x 12288. The q/k
    norm: an RMSNorm over each of q's 32 and k's 8 heads, T (4096 + 1024) = 163,840 values, each
    read and written once at 2 bytes: 655,360 bytes, 4 FLOPs a value (ops.ELEMENTWISE: mean of
    squares, rsqrt, normalize, scale): 655,360; then the rotary embedding on the same values."""
    net = load_network(HF / "qwen3-8b.json").with_overrides(batch=2, seq=16, mode="inference")
    gemms, ops = _items(net, "forward")
    assert gemms == [("blk.1.qkv", 32, 6144, 4096), ("blk.1.proj", 32, 4096, 4096),
                     ("blk.1.ffn_up", 32, 24576, 4096), ("blk.1.ffn_down", 32, 4096, 12288)]
    assert [(layer, kind) for layer, kind, *_ in ops][:4] == [
        ("blk.1", "rmsnorm"), ("blk.1.attn", "rmsnorm"), ("blk.1.attn", "rotary"),
        ("blk.1.attn", "kv-cache-write")]
    assert ops[1] == ("blk.1.attn", "rmsnorm", 4 * 163_840, 2 * 2 * 163_840) and (
        2 * 2 * 163_840 == 655_360)
    # in fp32 (e = 4) the same values at twice the bytes, as the block's own norms
    fp32 = load_network(HF / "qwen3-8b.json").with_overrides(batch=2, seq=16, mode="inference",
                                                              dtype="fp32")
    assert _items(fp32, "forward")[1][1] == ("blk.1.attn", "rmsnorm", 655_360, 1_310_720)


def test_qwen3_8b_training_backward_by_hand():
    """Training, batch 2, seq 16, bf16: the q/k norm's backward (rmsnorm-backward, 8 FLOPs a
    value, dy and x read, dx written: 3 x 2 bytes) on the 163,840 values of dq and dk, after the
    rotary embedding's backward and before the QKV projection's gradients; its input kept for it:
    163,840 x 2 = 327,680 bytes more than the same block without the q/k norm keeps."""
    net = load_network(HF / "qwen3-8b.json").with_overrides(batch=2, seq=16, mode="train")
    kinds = [(o.layer, o.kind, o.flops, o.bytes) for o in net.ops()
             if o.pass_ == "backward" and o.layer == "blk.1.attn"]
    assert kinds[-2:] == [("blk.1.attn", "rotary-backward", 3 * 163_840, 2 * 2 * 163_840),
                          ("blk.1.attn", "rmsnorm-backward", 8 * 163_840, 3 * 2 * 163_840)]
    block = next(run.layer for run in net.layer_runs if run.layer.name == "blk")
    plain = network_from_yaml(_QK.format(qk="false", mode="train")).layer_runs[0].layer
    normed = network_from_yaml(_QK.format(qk="true", mode="train")).layer_runs[0].layer
    step = net.step()
    assert saved_bytes(normed, step, "none") - saved_bytes(plain, step, "none") == 327_680
    assert saved_bytes(block, step, "none") == saved_bytes(normed, step, "none")
    # full recomputation keeps the block's input only: the q/k norm adds nothing there
    assert saved_bytes(normed, step, "full") == saved_bytes(plain, step, "full")


_QK = """
batch: 2
seq: 16
dtype: bf16
mode: {mode}
layers:
  - {{type: transformer, name: blk, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128,
     ffn: 12288, gated: true, causal: true, norm: rmsnorm, rotary: true, qk_norm: {qk}}}
"""


def test_qk_norm_in_a_model_file_by_hand():
    # the field adds two head_dim-wide scales (q's and k's; layernorm: scale and shift each) and
    # one op a pass, nothing else: the GEMMs are the same
    plain = network_from_yaml(_QK.format(qk="false", mode="inference"))
    normed = network_from_yaml(_QK.format(qk="true", mode="inference"))
    assert normed.parameters - plain.parameters == 2 * 128
    assert [g.flops for g in normed.gemms()] == [g.flops for g in plain.gemms()]
    extra = [o for o in normed.ops() if (o.layer, o.kind) == ("blk.attn", "rmsnorm")]
    assert [(o.flops, o.bytes) for o in extra] == [(655_360, 655_360)]
    assert len(normed.ops()) == len(plain.ops()) + 1
    layer = network_from_yaml(_QK.format(qk="true", mode="inference").replace(
        "norm: rmsnorm", "norm: layernorm"))
    assert layer.parameters - network_from_yaml(_QK.format(qk="false", mode="inference").replace(
        "norm: rmsnorm", "norm: layernorm")).parameters == 4 * 128
    with pytest.raises(InputError, match=r"layers\[0\].qk_norm: expected true or false"):
        network_from_yaml(_QK.format(qk="1", mode="inference"))


def test_qwen3_32b_attention_is_wider_than_its_hidden():
    # 64 heads x head_dim 128 = 8192 queries on a 5120 hidden: qkv N = 8192 + 2 x 8 x 128 =
    # 10240, proj K = 8192; the q/k norm over T (8192 + 1024) values
    net = load_network(HF / "qwen3-32b.json").with_overrides(batch=1, seq=8, mode="inference")
    gemms, ops = _items(net, "forward")
    assert gemms[:2] == [("blk.1.qkv", 8, 10240, 5120), ("blk.1.proj", 8, 5120, 8192)]
    assert ops[1][:3] == ("blk.1.attn", "rmsnorm", 4 * 8 * 9216)


def test_qwen3_moe_block_by_hand():
    """Qwen3-30B-A3B, inference prefill at batch 1, seq 64: T = 64 tokens, each to 8 of 128
    experts: 512 routed rows, 4 for each expert. Router T x 128 x 2048; each expert's gated up
    4 x 2 x 768 x 2048 and down 4 x 2048 x 768 (moe_intermediate_size; the dense
    intermediate_size 6144 unused); the q/k norm over T (4096 + 512) values."""
    net = load_network(HF / "qwen3-30b-a3b.json").with_overrides(batch=1, seq=64,
                                                                 mode="inference")
    gemms = [(g.layer, g.m, g.n, g.k, g.batch_count) for g in net.gemms()
             if g.layer.startswith("blk.1.")]
    assert gemms == [("blk.1.qkv", 64, 4096 + 1024, 2048, 1),
                     ("blk.1.proj", 64, 2048, 4096, 1), ("blk.1.router", 64, 128, 2048, 1),
                     ("blk.1.expert_up", 4, 1536, 2048, 128),
                     ("blk.1.expert_down", 4, 2048, 768, 128)]
    norm = next(o for o in net.ops() if (o.layer, o.kind) == ("blk.1.attn", "rmsnorm"))
    assert (norm.flops, norm.bytes) == (4 * 64 * 4608, 2 * 2 * 64 * 4608)


def _moe(**changes):
    config = json.loads((HF / "qwen3-30b-a3b.json").read_text())
    config.update(changes)
    return config


@pytest.mark.parametrize("changes, key, problem", [
    ({"mlp_only_layers": [0, 1]}, "mlp_only_layers",
     "layers 0, 1 are dense: 2 dense layers (intermediate_size) among 46 sparse ones"),
    # transformers: layer i sparse when (i + 1) % decoder_sparse_step == 0: 24 of 48
    ({"decoder_sparse_step": 2}, "decoder_sparse_step",
     "every layer but each 2nd is dense: 24 dense layers (intermediate_size) among 24 sparse"),
    # step 3: layers 2, 5, ..., 47 sparse (16), layer 2 made dense too: 15 sparse, 33 dense
    ({"decoder_sparse_step": 3, "mlp_only_layers": [2]}, "decoder_sparse_step",
     "every layer but each 3rd is dense: 33 dense layers (intermediate_size) among 15 sparse"),
    ({"mlp_only_layers": list(range(30))}, "mlp_only_layers",
     "layers 0, 1, 2, 3, 4 and 25 more are dense: 30 dense layers"),
    ({"mlp_only_layers": ["0"]}, "mlp_only_layers[0]",
     "expected a layer index (an integer), got '0'"),
])
def test_dense_layers_among_sparse_ones_are_refused(changes, key, problem):
    with pytest.raises(InputError) as raised:
        model_from_config(_moe(**changes), "config.json")
    assert raised.value.path == key and problem in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_refusal_is_one_line_on_the_command_line(invoke, tmp_path):
    config = tmp_path / "mixed.json"
    config.write_text(json.dumps(_moe(mlp_only_layers=[0, 1])))
    result = invoke("analyze", config, "--hw", "h100", "--batch", "1", "--seq", "128")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {config}: mlp_only_layers: layers 0, 1 are dense: 2 dense layers "
        f"(intermediate_size) among 46 sparse ones (num_experts), which one repeated block "
        f"cannot say; read are configs whose layers are all sparse (decoder_sparse_step 1, "
        f"mlp_only_layers []) or all dense")


@pytest.mark.parametrize("changes", [{"mlp_only_layers": list(range(48))},
                                     {"decoder_sparse_step": 49},
                                     # transformers' and vLLM's rule: sparse where also
                                     # num_experts > 0
                                     {"num_experts": 0}])
def test_no_sparse_layer_is_a_dense_model(changes):
    # every layer dense: transformers' Qwen3MoeMLP of intermediate_size 6144, no router; by
    # hand 48 blocks of 18,874,368 attention + 3 x 2048 x 6144 + 4096 + 256 norms, the final
    # norm, embedding and output 2 x 151936 x 2048
    layers = model_from_config(_moe(**changes), "config.json")["layers"]
    assert layers[1]["ffn"] == 6144 and "experts" not in layers[1]
    net = load_network(HF / "qwen3-30b-a3b.json")  # the published one: all sparse
    assert net.layer_runs[1].layer.experts == 128
    dense = 48 * (18_874_368 + 3 * 2048 * 6144 + 4096 + 256) + 2048 + 2 * VOCAB * 2048
    assert network_from_dict(model_from_config(_moe(**changes), "c.json"), "c.json"
                             ).parameters == dense


@pytest.mark.parametrize("name, changes, expected", [
    ("qwen3-8b.json", {}, []),
    ("qwen3-32b.json", {}, []),
    # moe_intermediate_size is the experts' width here, modelled; the routing keys cost nothing
    ("qwen3-30b-a3b.json", {}, []),
    ("qwen3-235b-a22b.json", {}, []),
    # the sliding window, read as Qwen2's: on where use_sliding_window turns it on
    ("qwen3-8b.json", {"sliding_window": 4096, "use_sliding_window": True},
     [("sliding_window", "4096")]),
    ("qwen3-30b-a3b.json", {"sliding_window": 4096, "use_sliding_window": False}, []),
    ("qwen3-30b-a3b.json", {"sliding_window": 4096, "use_sliding_window": True},
     [("sliding_window", "4096")]),
    # Qwen3's attention_bias (the q, k, v and o biases), warned of as Llama's
    ("qwen3-8b.json", {"attention_bias": True}, [("attention_bias", "true")]),
])
def test_what_a_qwen3_config_leaves_unmodelled(name, changes, expected):
    config = json.loads((HF / name).read_text())
    config.update(changes)
    assert model_from_config(config, name).unmodelled == expected


def test_235b_at_tp_8_replicates_its_4_kv_heads(invoke):
    """analyze --tp 8 on Qwen3-235B-A22B (64 query heads, 4 KV heads, head_dim 128): tp 8 passes
    the KV heads, so each GPU holds one, the same on 2 GPUs (vLLM's QKVParallelLinear): per GPU
    qkv N = 64 / 8 x 128 + 2 x 128 = 1280, proj K = 1024; the experts split along their width,
    1536 / 8 = 192 (gated up N 384); the q/k norm over the GPU's 8 query and 1 KV heads, T x
    1152 values; decode at batch 16: T = 16."""
    data = json.loads(invoke("analyze", HF / "qwen3-235b-a22b.json", "--hw", "h100-sxm5-80gb",
                             "--batch", "16", "--seq", "1024", "--mode", "inference", "--phase",
                             "decode", "--tp", "8", "--format", "json").stdout)
    shapes = {g["layer"]: (g["m"], g["n"], g["k"]) for g in data["gemms"]
              if g["layer"].startswith("blk.1.")}
    assert shapes["blk.1.qkv"] == (16, 1280, 4096) and shapes["blk.1.proj"] == (16, 4096, 1024)
    assert shapes["blk.1.expert_up"][1:] == (384, 4096)
    assert shapes["blk.1.expert_down"][1:] == (4096, 192)
    norm = next(o for o in data["ops"] if (o["layer"], o["kind"]) == ("blk.1.attn", "rmsnorm"))
    assert (norm["flops"], norm["bytes"]) == (4 * 16 * 1152, 2 * 2 * 16 * 1152)
    text = " ".join(invoke("analyze", HF / "qwen3-235b-a22b.json", "--hw", "h100-sxm5-80gb",
                           "--batch", "16", "--seq", "1024", "--mode", "inference", "--phase",
                           "decode", "--tp", "8").stdout.split())
    assert ("KV heads replicated: tp 8 passes the model's 4 KV heads, so each GPU holds one, "
            "the same on 2 GPUs") in text


def test_qwen3_moe_at_tp_4_by_hand():
    """Qwen3-30B-A3B decode at tp 4, batch 64 over 2048 cached tokens: vLLM's Qwen3MoeSparseMoeBlock
    runs FusedMoE, each expert's intermediate split over tp (moe_intermediate_size 768 / 4 =
    192: gated up 2 x 192 = 384 wide, down K 192), the router (gate, ReplicatedLinear) whole,
    128 x 2048; 64 tokens x 8 experts = 512 routed rows, 4 for each of the 128 experts. The
    attention: 32 / 4 = 8 query heads and 4 / 4 = 1 KV head a GPU of head_dim 128: qkv 64 x
    (1024 + 2 x 128) x 2048, proj 64 x 2048 x 1024. All-reduces: o_proj's and the experts' in
    each of 48 blocks and the embedding's, 2 x 48 + 1 = 97."""
    report = analyze_model(HF / "qwen3-30b-a3b.json", "h100", batch=64, seq=2048,
                           mode="inference", phase="decode", tp=4)
    gemms = [(r.gemm.layer, r.gemm.m, r.gemm.n, r.gemm.k, r.gemm.batch_count)
             for r in report.results if r.gemm.layer.startswith("blk.1.")]
    assert gemms == [("blk.1.qkv", 64, 1280, 2048, 1), ("blk.1.proj", 64, 2048, 1024, 1),
                     ("blk.1.router", 64, 128, 2048, 1),
                     ("blk.1.expert_up", 4, 2 * 768 // 4, 2048, 128),
                     ("blk.1.expert_down", 4, 2048, 768 // 4, 128)]
    transfers = {t["collective"]: t["count"]
                 for t in report.tensor_parallel.to_dict()["step"]["transfers"]}
    assert transfers["all-reduce"] == 2 * 48 + 1


def test_a_qwen3_config_without_head_dim_takes_qwen3configs_128(tmp_path):
    """transformers' Qwen3Config declares ``head_dim: int = 128`` (configuration_qwen3.py), and
    vLLM's Qwen3Attention takes the config's head_dim: Qwen3-32B without the key is still 64
    heads of 128 (its block by hand in test_the_blocks_by_hand, 64 blocks), not 5120 / 64 = 80
    (q, o 5120 x 5120 and k, v 5120 x 640: 2 x (41,943,040 - 26,214,400) + 2 x (5,242,880 -
    3,276,800) = 35,389,440 fewer a block, and q/k norms of 80). Qwen3MoeConfig has no such
    default (its modelling code takes hidden / heads): unchanged."""
    config = json.loads((HF / "qwen3-32b.json").read_text())
    del config["head_dim"]
    path = tmp_path / "qwen3-32b-no-head-dim.json"
    path.write_text(json.dumps(config))
    assert load_network(path).parameters == load_network(HF / "qwen3-32b.json").parameters
    assert load_network(path).parameters == 64 * CARDS[1][2] + 5120 + 2 * VOCAB * 5120
    moe = _moe()
    del moe["head_dim"]
    assert "head_dim" not in model_from_config(moe, "c.json")["layers"][1]
