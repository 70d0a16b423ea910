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
    group = doc["data_parallel"]
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
