"""Serving past the KV heads (``analyze --tp N`` with N above a block's kv_heads): vLLM gives
each GPU one KV head, the same head on N / kv_heads GPUs (``QKVParallelLinear``:
``num_kv_heads = 1``, ``num_kv_head_replicas = divide(tp_size, total_num_kv_heads)`` when
``tp_size >= total_num_kv_heads``; ``ModelConfig.get_num_kv_heads``: ``max(1, total // tp)``),
and refuses an N that is no multiple of them. Every figure below is worked by hand from a
Llama-3-70B-like config (Meta's published config.json: hidden 8192, 64 heads, 8 KV heads of
128, FFN 28672 gated, 80 blocks, vocabulary 128256, bf16)."""

from __future__ import annotations

import json

import pytest

from roofline.analysis.parallel_layout import Layout, check_layout
from roofline.api import analyze_model
from roofline.errors import InputError
from roofline.model.network import load_network

H100 = "h100-sxm5-80gb"
LLAMA_70B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
             "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
             "num_attention_heads": 64, "num_key_value_heads": 8,
             "max_position_embeddings": 8192, "vocab_size": 128256, "rms_norm_eps": 1e-5,
             "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def _config(tmp_path, name="llama-3-70b", **changes):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(LLAMA_70B | changes))
    return path


def _decode(path, tp, batch=1, seq=1024):
    return analyze_model(path, H100, batch=batch, mode="inference", phase="decode", seq=seq,
                         tp=tp, gpus_per_node=16, intra="nvswitch-h100")


def test_tp_16_gives_each_gpu_one_of_the_8_kv_heads(tmp_path):
    # 64 heads / 16 = 4 query heads a GPU and one KV head (8 < 16): the QKV GEMM's N is
    # (4 + 2) x 128 = 768 (not 4 x 128 + 2 x 0.5 x 128); proj's K 4 x 128 = 512; the gated
    # FFN's N 2 x 28672 / 16 = 3584, the down projection's K 1792
    report = _decode(_config(tmp_path), 16, batch=2)
    shapes = [(g.gemm.m, g.gemm.n, g.gemm.k) for g in report.results]
    assert shapes[:4] == [(2, 768, 8192), (2, 8192, 512), (2, 3584, 8192), (2, 8192, 1792)]
    assert report.tensor_parallel.kv_replicas == 2  # 16 GPUs / 8 KV heads


def test_the_kv_cache_a_gpu_holds_stops_halving_past_the_kv_heads(tmp_path):
    # 2 (K and V) x 80 blocks x KV heads a GPU x 128 x 1024 tokens x batch 2 x 2 B:
    # tp 4: 2 heads a GPU, 167,772,160 B; tp 8: one, 83,886,080; tp 16: still one (the same
    # head on 2 GPUs), 83,886,080, not the 41,943,040 that 1/16 of the whole would be
    path = _config(tmp_path)
    kv = {tp: _decode(path, tp, batch=2).memory.parts["kv_cache"] for tp in (4, 8, 16)}
    assert kv == {4: 167_772_160, 8: 83_886_080, 16: 83_886_080}
    assert 2 * 80 * 1 * 128 * 1024 * 2 * 2 == 83_886_080  # one head a GPU


def test_the_weights_a_gpu_holds_count_the_replicated_k_and_v(tmp_path):
    # a block at tp 16: qkv 8192 x 768 = 6,291,456; proj 512 x 8192 = 4,194,304; FFN 3 x
    # 8192 x 1792 = 44,040,192; two RMSNorms 2 x 8192 = 16,384: 54,542,336; x 80 =
    # 4,363,386,880; the embedding and lm_head 128256 / 16 = 8016 rows x 8192 each
    # (128256 is a multiple of 64: vLLM pads nothing) = 131,334,144; the final norm 8192:
    # 4,494,729,216 parameters, 8,989,458,432 B in bf16. Of them K and V: 80 x 2 x 8192 x
    # 128 = 167,772,160, twice the 1/16 of the model's 80 x 2 x 8192 x 1024 they would be
    report = _decode(_config(tmp_path), 16)
    assert report.network.parameters == 4_494_729_216
    assert report.memory.parts["weights"] == 8_989_458_432
    assert 16 * 80 * 2 * 8192 * 128 == 2 * (80 * 2 * 8192 * 1024)


def test_json_and_header_say_the_kv_heads_are_replicated(invoke, tmp_path):
    path = _config(tmp_path)
    args = ("analyze", str(path), "--hw", H100, "--mode", "inference", "--phase", "decode",
            "--batch", "1", "--seq", "1024", "--tp", "16", "--gpus-per-node", "16",
            "--intra", "nvswitch-h100")
    doc = json.loads(invoke(*args, "--format", "json").stdout)
    assert doc["tensor_parallel"]["kv_head_replicas"] == 2
    text = " ".join(invoke(*args, "--gemms-only").stdout.split())
    assert ("KV heads replicated: tp 16 passes the model's 8 KV heads, so each GPU holds one, "
            "the same on 2 GPUs (vLLM's QKVParallelLinear): its K and V weights and KV cache "
            "are 1/8 of the model's, not 1/16") in text
    at_8 = json.loads(invoke(*args[:-4], "--tp", "8", "--format", "json").stdout)
    assert at_8["tensor_parallel"]["kv_head_replicas"] == 1
    assert "KV heads replicated" not in invoke(*args[:-4], "--tp", "8", "--gemms-only").stdout


def test_one_kv_head_multi_query_is_held_whole_on_every_gpu(tmp_path):
    # multi-query attention (1 KV head) at tp 8: every GPU holds the one head: the KV cache a
    # GPU holds is the whole model's, 2 x 80 x 128 x 512 x 2 B = 20,971,520 at tp 1 and 8
    path = _config(tmp_path, "mqa", num_key_value_heads=1)
    one = analyze_model(path, H100, batch=1, mode="inference", phase="decode", seq=512)
    eight = analyze_model(path, H100, batch=1, mode="inference", phase="decode", seq=512, tp=8)
    assert one.memory.parts["kv_cache"] == eight.memory.parts["kv_cache"] == 20_971_520
    assert eight.tensor_parallel.kv_replicas == 8
    assert eight.results[0].gemm.n == (64 // 8 + 2) * 128


@pytest.mark.parametrize("changes, tp, expected", [
    # 48 heads and FFN 24576 divide by 12, but 12 is past the 8 KV heads and no multiple:
    # vLLM's divide(12, 8) asserts "12 is not divisible by 8"
    ({"num_attention_heads": 48, "head_dim": 128, "intermediate_size": 24576}, 12,
     "tensor parallelism 12 is past kv_heads (8) of block 'blk.1' but no multiple of them: "
     "vLLM gives each GPU one KV head, the same on tp / kv_heads GPUs, and refuses it (12 is "
     "not divisible by 8) (--tp)"),
    # 6 KV heads (of 48) at tp 4: below them, and 4 does not divide 6: divide(6, 4)
    ({"num_attention_heads": 48, "head_dim": 128, "num_key_value_heads": 6}, 4,
     "tensor parallelism 4 does not divide kv_heads (6) of block 'blk.1': each GPU must get "
     "whole kv_heads, or one replicated where tp is a multiple of them (vLLM: 6 is not "
     "divisible by 4) (--tp)"),
    # the query heads must still divide (vLLM: "Total number of attention heads (64) must be
    # divisible by tensor parallel size (12)")
    ({}, 12, "tensor parallelism 12 does not divide heads (64) of block 'blk.1': each GPU must "
             "get whole heads (--tp)"),
])
def test_a_tp_vllm_cannot_split_is_refused_in_one_line(invoke, tmp_path, changes, tp,
                                                        expected):
    path = _config(tmp_path, **changes)
    result = invoke("analyze", str(path), "--hw", H100, "--batch", "1", "--prompt", "8",
                    "--generate", "8", "--tp", str(tp), "--gpus-per-node", "16",
                    "--intra", "nvswitch-h100")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [f"Error: {path}: {expected}"]


def test_plan_keeps_megatrons_rule_tp_divides_the_kv_heads(tmp_path):
    """Megatron-LM splits the query groups (num_query_groups % tp == 0), with no replication:
    plan (training) still refuses tp 16 on 8 KV heads."""
    network = load_network(_config(tmp_path)).with_overrides(batch=16, seq=1024)
    with pytest.raises(InputError, match=r"tensor parallelism 16 does not divide kv_heads \(8\)"):
        check_layout(network, Layout(tp=16))
