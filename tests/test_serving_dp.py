"""Serving over data-parallel ranks (``analyze --dp D``, ``analysis.serving_dp``), as vLLM's
``--data-parallel-size D --enable-expert-parallel``: every figure worked by hand below.

DeepSeek-V3 (examples/hf/deepseek-v3.json, DeepSeek's published config): hidden 7168, 61
blocks of which the first 3 dense (``first_k_dense_replace``) and 58 of 256 routed experts of
``moe_intermediate_size`` 2048 (gated: up 2 x 2048), top_k 8, MLA with kv_lora_rank 512 and
qk_rope_head_dim 64 (its KV cache keeps 512 + 64 = 576 values a token a block: 61 x 576 x 2 B =
70,272 B a token in bf16). vLLM's documented deployment is DP 8, TP 1, EP on an 8-GPU H200 node
(``docs/serving/expert_parallel_deployment.md``)."""

from __future__ import annotations

import json

import pytest

from roofline.api import analyze_model
from roofline.errors import InputError

DEEPSEEK = "examples/hf/deepseek-v3.json"
H200 = "h200-sxm-141gb"
KV_A_TOKEN = 61 * (512 + 64) * 2  # B a token, all blocks
NVSWITCH_GBS, NVSWITCH_US = 450.0, 3.4  # links.yaml's nvswitch-h100, the H200's default


def _decode(**kw):
    settings = dict(batch=256, seq=4096, mode="inference", phase="decode") | kw
    return analyze_model(DEEPSEEK, H200, **settings)


@pytest.fixture(scope="module")
def dp8():
    return _decode(dp=8)


def test_the_kv_cache_a_gpu_holds_is_its_ranks_sequences_only(dp8):
    # batch 256 over 8 ranks: 32 sequences a rank; KV per GPU 32 x 4096 x 70,272 B. At tp 8
    # the latent is whole on every GPU, and every GPU holds all 256 sequences: 8 times it
    assert KV_A_TOKEN == 70_272
    assert dp8.memory.parts["kv_cache"] == 32 * 4096 * 70_272 == 9_210_691_584
    tp8 = _decode(tp=8)
    assert tp8.memory.parts["kv_cache"] == 256 * 4096 * 70_272 == 8 * 9_210_691_584
    assert dp8.data_parallel.rank_batch == 32 and dp8.network.batch == 32


def test_each_gpu_holds_32_whole_experts_with_the_ranks_tokens_spread_over_them(dp8):
    # 256 experts / 8 GPUs = 32 a GPU; the 256 x 8 = 2048 routed rows of the group spread
    # evenly over the 256 experts, 8 each: the expert_up GEMM is 32 batched 8 x 4096 x 7168
    assert dp8.data_parallel.local_experts == 32
    shapes = {(r.gemm.batch_count, r.gemm.m, r.gemm.n, r.gemm.k) for r in dp8.results}
    assert (32, 8, 2 * 2048, 7168) in shapes  # expert_up
    assert (32, 8, 7168, 2048) in shapes  # expert_down
    assert not any(count == 256 for count, *_ in shapes)  # no GPU runs all 256


def test_the_experts_a_gpu_drops_are_224_of_256_per_moe_block(dp8):
    # one expert: 7168 x 4096 (gate and up) + 2048 x 7168 (down) = 44,040,192 weights; a GPU
    # holds 32 of each MoE block's 256, the rest (224 x 58 blocks) on the other GPUs
    whole = analyze_model(DEEPSEEK, H200, batch=32, seq=4096, mode="inference", phase="decode")
    expert = 7168 * 2 * 2048 + 2048 * 7168
    assert expert == 44_040_192
    assert whole.network.parameters - dp8.network.parameters == 58 * 224 * expert


def test_dispatch_and_combine_bytes_and_times_by_hand(dp8):
    # each GPU adds its 32 tokens x (7168 x 2 B hidden + 8 experts x (4 B weight + 4 B id)) =
    # 32 x 14,400 = 460,800 B to the all-gather, 3,686,400 B gathered; the combine
    # reduce-scatters 8 x 32 x 7168 x 2 = 3,670,016 B. Ring on 8 GPUs: 7/8 of the buffer at
    # 450 GB/s, plus 7 steps of 3.4 us predicted; 58 MoE layers each
    step = dp8.data_parallel.step
    assert (step.dispatch.per_gpu, step.dispatch.nbytes) == (460_800, 3_686_400)
    assert step.combine.nbytes == 3_670_016 and step.layers == 58
    ag = 7 / 8 * 3_686_400 / 450e9
    rs = 7 / 8 * 3_670_016 / 450e9
    assert step.dispatch.roof_s == pytest.approx(ag) and ag == pytest.approx(7.168e-6)
    assert step.combine.predicted_s == pytest.approx(rs + 7 * 3.4e-6)
    assert step.roof_s == pytest.approx(58 * (ag + rs))
    assert step.predicted_s == pytest.approx(58 * (ag + rs + 2 * 7 * 3.4e-6))
    totals = dp8.totals
    assert totals["dp_comm_time_s"] == pytest.approx(58 * (ag + rs))
    # the step time holds it: GEMMs, ops and the dispatch and combine
    assert totals["time_s"] == pytest.approx(totals["gemm_time_s"] + totals["op_time_s"]
                                             + totals["dp_comm_time_s"])


def test_tokens_per_s_are_the_eight_ranks(dp8):
    # 8 ranks x 32 tokens a decode step over the step's time, which is every rank's (an even
    # spread: no rank idles, none runs a dummy step)
    group = dp8.data_parallel
    assert group.tokens_per_s() == pytest.approx(8 * 32 / dp8.totals["time_s"])
    assert group.tokens_per_s(True) == pytest.approx(8 * 32 / dp8.totals["predicted_time_s"])


def test_the_group_fits_eight_times_a_ranks_batch():
    # fp8 weights (as the checkpoint is stored): a rank fits the batch its memory line says,
    # the group 8 times it; a sequence of 4096 tokens adds 4096 x 70,272 = 287,834,112 B of KV
    # cache to its rank's GPU only
    report = _decode(dp=8, weights="fp8")
    rank = report.memory.max_batch
    assert rank and report.data_parallel.max_batch == 8 * rank
    at = _decode(dp=8, weights="fp8", batch=8 * rank).memory
    over = _decode(dp=8, weights="fp8", batch=8 * (rank + 1)).memory
    assert over.parts["kv_cache"] - at.parts["kv_cache"] == 4096 * 70_272 == 287_834_112
    assert at.total_bytes <= at.capacity_bytes < over.total_bytes


def test_a_dense_models_ranks_are_replicas():
    # Llama-2-7B at dp 4 x tp 2, batch 64: each replica serves 16 sequences as --tp 2 does,
    # no communication between replicas; tokens/s 4 x 16 over the replica's step
    args = dict(batch=64, seq=1024, mode="inference", phase="decode")
    report = analyze_model("examples/hf/llama-2-7b.json", "h100", dp=4, tp=2, **args)
    alone = analyze_model("examples/hf/llama-2-7b.json", "h100", tp=2, **args | {"batch": 16})
    assert report.totals["time_s"] == alone.totals["time_s"]
    assert report.totals["dp_comm_time_s"] == 0.0
    assert report.data_parallel.tokens_per_s() == pytest.approx(64 / alone.totals["time_s"])
    assert not report.data_parallel.moe and report.data_parallel.step.dispatch is None


def test_a_generation_adds_the_prefill_and_decode_dispatches():
    # prompt 64 + 4 tokens at batch 16 over dp 8: 2 sequences a rank; the prefill's tokens
    # 2 x 64 = 128 a rank, its dispatch 128 x 14,400 B a GPU; tokens/s 8 x 2 x 4 / latency
    report = analyze_model(DEEPSEEK, H200, batch=16, mode="inference", prompt=64, generate=4,
                           dp=8)
    group, g = report.data_parallel, report.generation
    assert group.prefill.dispatch.per_gpu == 128 * 14_400
    assert group.decode.dispatch.per_gpu == 2 * 14_400 and group.decode_steps == 3
    assert g.tokens_per_s == pytest.approx(8 * 2 * 4 / g.latency_s)
    assert group.generation_s == pytest.approx(group.prefill.roof_s + 3 * group.decode.roof_s)
    # the JSON's group tokens/s are the generation's alone: the last decode step's rate, 8 x 2
    # tokens over that step, is a larger figure and is not said beside them
    data = report.to_dict()
    assert data["data_parallel_ranks"]["tokens_per_s"] is None
    assert data["data_parallel_ranks"]["predicted_tokens_per_s"] is None
    assert data["generation"]["tokens_per_s"] == pytest.approx(8 * 2 * 4 / g.latency_s)


@pytest.mark.parametrize("kw, words", [
    (dict(dp=3), "batch 256 does not spread evenly over 3 data-parallel ranks"),
    (dict(dp=0), "dp: expected a positive integer, got 0"),
    (dict(dp=True), "dp: expected a positive integer, got True"),
    (dict(dp=8, tp=2), "sequence-parallel MoE"),
    (dict(dp=8, pp=2), "is not modelled: serve data-parallel ranks of one"),
    (dict(dp=8, gpus_per_node=4), "past one node of 4"),
    (dict(dp=8, mode="train", phase=None), "a training step's data parallelism"),
])
def test_refusals(kw, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(")):
        _decode(**kw)


def test_experts_that_do_not_split_evenly_are_refused():
    # Mixtral's 8 experts over 3 GPUs
    with pytest.raises(InputError, match="do not split the 8 experts"):
        analyze_model("examples/hf/mixtral-8x7b.json", "h100", batch=6, seq=128,
                      mode="inference", phase="decode", dp=3)


def test_cli_header_json_and_refusals(invoke):
    args = ("analyze", DEEPSEEK, "--hw", H200, "--mode", "inference", "--phase", "decode",
            "--batch", "256", "--seq", "4096", "--dp", "8")
    text = " ".join(invoke(*args, "--gemms-only").stdout.split())
    assert ("data-parallel attention over 8 ranks of tp 1, experts over 8 GPUs "
            "(expert-parallel: 256/8 = 32 whole experts a GPU)") in text
    assert "running its rank's 32 sequences of the batch's 256" in text
    assert "the routed rows spread evenly over the experts" in text
    assert "data-parallel communication, in the step time above: 58 MoE layers" in text
    doc = json.loads(invoke(*args, "--format", "json").stdout)
    group = doc["data_parallel_ranks"]
    assert (group["dp"], group["gpus"], group["local_experts"], group["lockstep"]) == (
        8, 8, 32, True)
    assert group["all2all_backend"] == "allgather_reducescatter"
    assert doc["totals"]["dp_comm_time_s"] == group["step"]["time_s"]
    for command in (("compare", DEEPSEEK, "--hw", H200, "--hw", "h100"),
                    ("sweep", DEEPSEEK, "--hw", H200)):
        result = invoke(*command, "--batch", "8", "--seq", "16", "--dp", "8")
        assert result.exit_code == 2
        assert "`roofline analyze --dp 8` does" in result.output
    result = invoke("analyze", DEEPSEEK, "--hw", H200, "--batch", "8", "--seq", "16",
                    "--intra", "nvswitch-h100")
    assert result.exit_code == 2  # --intra still wants a group: --tp, --pp or --dp


def test_csv_and_html_say_the_ranks(invoke):
    args = ("analyze", DEEPSEEK, "--hw", H200, "--mode", "inference", "--phase", "decode",
            "--batch", "16", "--seq", "64", "--dp", "8")
    rows = invoke(*args, "--format", "csv").stdout.splitlines()
    header, first = rows[0].split(","), rows[1].split(",")
    assert first[header.index("dp")] == "8" and first[header.index("batch")] == "2"
    page = invoke(*args, "--format", "html").stdout
    assert "data parallelism" in page and "(one GPU of dp 8 x tp 1)" in page


QWEN3_30B = "examples/hf/qwen3-30b-a3b.json"  # Qwen's config: hidden 2048, 48 blocks, 128
# experts of top_k 8, 4 KV heads of 128 (its config.json, examples/hf/SOURCES.md)


def _qwen(**kw):
    settings = dict(batch=64, seq=2048, mode="inference", phase="decode", dp=4) | kw
    return analyze_model(QWEN3_30B, H200, **settings)


def test_qwen3_30b_at_dp_4_by_hand():
    # dp 4, batch 64: 16 sequences a rank; 128 experts / 4 GPUs = 32 a GPU. KV a GPU: 16 seq x
    # 2048 tokens x 48 blocks x 4 KV heads x 128 x 2 (K, V) x 2 B (bf16) = 3,221,225,472 B.
    # Dispatch a MoE layer: t = 16 tokens, h = 2048 at 2 B, top_k 8 ids int32 + weights fp32:
    # 16 x (2048 x 2 + 8 x 8) = 66,560 B a GPU, 4 x that = 266,240 gathered; combine the 4 x 16
    # tokens' output at bf16, 4 x 16 x 2048 x 2 = 262,144. Roof on 450 GB/s NVSwitch, ring
    # (p - 1) / p = 3/4: (266,240 + 262,144) x 3/4 / 450e9 = 880.64 ns a layer, x 48 blocks
    # = 42.27 us; predicted adds 3 steps x 3.4 us a collective: 48 x 2 x 10.2 us = 979.2 us
    r = _qwen()
    dp = r.data_parallel
    assert dp.local_experts == 32 and r.network.batch == 16
    assert r.memory.parts["kv_cache"] == 16 * 2048 * 48 * 4 * 128 * 2 * 2 == 3_221_225_472
    step = dp.step
    assert step.layers == 48 and step.hidden_dtype == "bf16"
    assert step.dispatch.per_gpu == 66_560 and step.dispatch.nbytes == 266_240
    assert step.combine.nbytes == 262_144
    assert step.roof_s == pytest.approx(48 * (266_240 + 262_144) * 0.75 / 450e9)
    assert step.roof_s == pytest.approx(42.27e-6, rel=1e-3)
    assert step.predicted_s == pytest.approx(step.roof_s + 48 * 2 * 3 * 3.4e-6)
    # each of the 32 local experts gets the group's 64 x 8 / 128 = 4 routed rows
    shapes = {(x.gemm.batch_count, x.gemm.m) for x in r.results if x.gemm.layer.endswith("expert_up")}
    assert shapes == {(32, 4)}


def test_a_w8a8_dispatch_gathers_fp8_hidden_states_and_combines_at_bf16():
    # vLLM's naive DP/EP prepare quantizes the hidden states before the all-gather
    # (_quantize_and_setup_dispatch, quant_dtype fp8 under W8A8); the experts' output comes
    # back bf16. Dispatch: 16 x (2048 x 1 + 64) = 33,792 B a GPU, 135,168 gathered; the
    # combine stays 262,144. A weight-only format (int4, W4A16) leaves quant_dtype None: bf16
    w8a8 = _qwen(weights="fp8", activations="fp8").data_parallel.step
    assert w8a8.hidden_dtype == "fp8"
    assert w8a8.dispatch.per_gpu == 33_792 and w8a8.dispatch.nbytes == 135_168
    assert w8a8.combine.nbytes == 262_144
    w4a16 = _qwen(weights="int4").data_parallel.step
    assert w4a16.dispatch.nbytes == 266_240 and w4a16.hidden_dtype == "bf16"


def test_the_experts_line_counts_the_groups_tokens():
    # the GPU's 32 experts of 128 are reached by all 4 GPUs' 16 tokens: 64 tokens, each
    # missing a given expert with probability 1 - 8/128: 32 (1 - (15/16)^64) = 31.49
    from roofline.output.times import expert_lines

    (line,) = expert_lines(_qwen(batch=64))
    assert "the group's 64 (4 GPUs x 16) tokens" in line
    assert f"{32 * (1 - (15 / 16) ** 64):.2f}" == "31.49" and "31.49" in line


def test_mixtral_at_dp_8_holds_one_whole_expert_a_gpu():
    # Mixtral-8x7B: 8 experts over 8 GPUs, 1 each. batch 64: 8 a rank; each expert gets the
    # group's 64 x 2 / 8 = 16 routed rows. Weights a GPU: attention 4096 x (4096 + 2 x 1024)
    # + 4096 x 4096 = 41,943,040, router 4096 x 8, one expert 3 x 4096 x 14336 = 176,160,768,
    # two norms 8192: 218,144,768 a block x 32, plus the embedding and the untied head 2 x
    # 32000 x 4096 and the final norm 4096: 7,242,780,672 at 2 B. KV: 8 seq x 2048 x 32 blocks
    # x 8 heads x 128 x 2 x 2 B = 2,147,483,648. Dispatch 8 x (4096 x 2 + 2 x 8) = 65,664 a GPU
    r = analyze_model("examples/hf/mixtral-8x7b.json", H200, batch=64, seq=2048,
                      mode="inference", phase="decode", dp=8)
    dp = r.data_parallel
    assert dp.local_experts == 1 and r.network.batch == 8
    assert r.memory.parts["weights"] == 2 * (32 * 218_144_768 + 2 * 32000 * 4096 + 4096)
    assert r.memory.parts["kv_cache"] == 8 * 2048 * 32 * 8 * 128 * 2 * 2 == 2_147_483_648
    assert dp.step.dispatch.per_gpu == 65_664 and dp.step.combine.nbytes == 8 * 8 * 4096 * 2
    shapes = {(x.gemm.batch_count, x.gemm.m) for x in r.results if x.gemm.layer.endswith("expert_up")}
    assert shapes == {(1, 16)}
    assert "1 whole expert a GPU" in dp_header(r)


def dp_header(report):
    from roofline.output.serving_dp import header_line

    return header_line(report.data_parallel)
