"""An independent review of ``analyze --pp`` (``analysis.serving_pp``): every figure worked
by hand, never read from the code's own output, on the cases ``test_serving_pp.py`` leaves
out: an MoE model, Qwen2's biases, GPT-2's embeddings on every stage, tensor parallelism past
the KV heads with a pipeline, stored weight and KV cache formats, a pipeline as deep as the
blocks, plain layers around repeated blocks, an inference step of each phase, and the
inter-node link given as GB/s or by name.

vLLM rules used (read from its source):

- ``vllm/distributed/utils.py``, ``get_pp_indices``: blocks // pp each, the remainder one
  more each to the stages before the last, from the second-last back.
- ``LlamaModel`` / ``Qwen2Model``: ``embed_tokens`` on the first rank (and the last where the
  head is tied), ``norm`` and ``lm_head`` on the last; ``MixtralModel`` /
  ``MixtralForCausalLM``: ``embed_tokens``, ``norm`` and ``lm_head`` on every rank; all three
  hand on ``IntermediateTensors({"hidden_states", "residual"})``.
- ``GPT2Model.__init__``: ``wte``, ``wpe``, ``ln_f`` on every rank; ``IntermediateTensors(
  {"hidden_states"})``.
- ``MixtralMoE``: each expert's w1/w3 and w2 split over tp by the intermediate size, the
  router (``gate``) a ``ReplicatedLinear``: whole on every GPU.
- ``Qwen2Attention``: ``qkv_proj`` with a bias (split with its columns), ``o_proj`` without.
- ``QKVParallelLinear``: past ``num_kv_heads`` each GPU holds one KV head (replicated).
- ``GroupCoordinator.send_tensor_dict(..., all_gather_group=tp_group)``: each GPU sends its
  1 / tp of a tensor tp divides, the receiving stage all-gathers it.
- ``max_concurrent_batches`` = pp (``MultiprocExecutor``), the V1 engine's batch queue.

Links (links.yaml): NVSwitch H100 450 GB/s, 3.4 us a step; InfiniBand NDR 4x 50 GB/s, 14 us;
InfiniBand HDR 4x 25 GB/s, 14 us. vLLM pads the vocabulary to a multiple of 64
(``DEFAULT_VOCAB_PADDING_SIZE``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.api import analyze_model

H100 = "h100-sxm5-80gb"
HF = Path(__file__).resolve().parents[1] / "examples" / "hf"
MIXTRAL, QWEN2, GPT2 = HF / "mixtral-8x7b.json", HF / "qwen2-7b.json", HF / "gpt2.json"
DECODE = {"mode": "inference", "phase": "decode"}

#: a model.yaml of 5 decoder blocks (4 repeated, 1 plain) between plain layers: embedding,
#: a projection in, the blocks, a projection out, the final norm and the head (untied, no
#: biases). One block's parameters: QKV 512 x (512 + 2 x 2 x 64) = 393,216, O 262,144, gate
#: and up 2 x 512 x 1024 = 1,048,576, down 524,288, two RMSNorms 1,024: 2,229,248.
MIXED = """\
name: mixed
batch: 2
seq: 128
dtype: bf16
mode: inference
phase: decode
layers:
  - {type: embedding, name: embed, vocab: 4096, dim: 512}
  - {type: linear, name: proj_in, in: 512, out: 512}
  - {type: transformer, name: blk, hidden: 512, heads: 8, kv_heads: 2, ffn: 1024,
     gated: true, causal: true, norm: rmsnorm, repeat: 4}
  - {type: transformer, name: extra, hidden: 512, heads: 8, kv_heads: 2, ffn: 1024,
     gated: true, causal: true, norm: rmsnorm}
  - {type: linear, name: proj_out, in: 512, out: 512}
  - {type: norm, name: norm, dim: 512, norm: rmsnorm}
  - {type: linear, name: lm_head, in: 512, out: 4096}
"""
BLOCK = 2_229_248
BLOCK_MATRICES = BLOCK - 1_024
EMBED = HEAD = 4096 * 512  # 2,097,152
PROJ = 512 * 512  # 262,144


@pytest.fixture
def mixed(tmp_path):
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    return path


def _weights(report):
    return [m.parts["weights"] for m in report.pipeline_parallel.stages.memories]


def _kv(report):
    return [m.parts["kv_cache"] for m in report.pipeline_parallel.stages.memories]


# -- Mixtral-8x7B: experts split over tp, the router whole, 16 blocks a stage, and the
# embedding, final norm and head on every stage --------------------------------------------
# hidden 4096, 32 heads of 128, 8 KV heads, 8 experts of FFN 14336, 32 blocks, vocabulary
# 32000 (a multiple of 64: no padding), untied. A block: QKV 4096 x 6144 = 25,165,824, O
# 16,777,216, experts 8 x 3 x 4096 x 14336 = 1,409,286,144, router 4096 x 8 = 32,768, two norms
# 8,192.

@pytest.mark.parametrize("tp, block, vocab_rows, kv_heads", [
    # (25,165,824 + 16,777,216 + 1,409,286,144) / 2 + 32,768 + 8,192
    (2, 725_655_552, 16_000, 4),
    # the same over 8: 181,403,648 + 40,960
    (8, 181_444_608, 4_000, 1),
])
def test_mixtral_stages_hold_their_experts_over_tp_and_the_router_whole(tp, block, vocab_rows,
                                                                        kv_heads):
    report = analyze_model(MIXTRAL, H100, batch=4, seq=512, tp=tp, pp=2, **DECODE)
    pp = report.pipeline_parallel
    # 32 blocks over 2: 16 each; the embedding first, the final norm and the head last
    assert pp.stages.blocks == (16, 16)
    assert pp.stages.names == (("embed_tokens", "blk.16"), ("blk.17", "lm_head"))
    # MixtralModel builds embed_tokens and norm, MixtralForCausalLM lm_head, on every rank (no
    # PPMissingLayer): each stage holds them all, whichever runs them
    embed = vocab_rows * 4096
    assert _weights(report) == [2 * (16 * block + embed + 4096 + embed)] * 2
    # KV cache: K and V x kv_heads x 128 x 2 B a token a block, 4 x 512 tokens, 16 blocks, 2
    # batches in flight
    assert _kv(report) == [2 * kv_heads * 128 * 2 * 4 * 512 * 16 * 2] * 2
    # the router's GEMM is whole on every GPU: N = 8 experts, K = 4096
    router = next(r for r in report.results if r.gemm.layer.endswith("router"))
    assert (router.gemm.n, router.gemm.k) == (8, 4096)


def test_mixtral_tp8_pp2_hands_off_between_nodes():
    # tp 8 fills an 8-GPU node: the hand-off crosses to the next node over InfiniBand NDR,
    # each GPU 1/8 of each tensor (4 tokens x 4096 x 2 B = 32,768 B; 4,096 B a GPU), then
    # all-gathered over NVSwitch in a ring of 8: per tensor 4,096 / 50e9 + 7/8 x 32,768 / 450e9,
    # predicted + 14 us + 7 x 3.4 us; two tensors (hidden_states, residual)
    report = analyze_model(MIXTRAL, H100, batch=4, seq=512, tp=8, pp=2, **DECODE)
    (h,) = report.pipeline_parallel.step.handoffs
    assert h.tensors == ("hidden_states", "residual") and h.crosses_nodes and h.gathered
    assert (h.nbytes, h.sent) == (32_768, 4_096)
    each = 4_096 / 50e9 + 7 / 8 * 32_768 / 450e9
    assert h.roof_s == pytest.approx(2 * each, rel=1e-12)
    assert h.predicted_s == pytest.approx(2 * (each + 14e-6 + 7 * 3.4e-6), rel=1e-12)
    assert report.pipeline_parallel.nodes == 2


def test_mixtral_stages_add_up_to_the_tp_groups_step():
    # the pipeline splits the tp shard's work, it does not change it: the stages sum to tp 2
    # alone's step (roof and predicted), and the step time adds the one hand-off
    alone = analyze_model(MIXTRAL, H100, batch=4, seq=512, tp=2, **DECODE)
    report = analyze_model(MIXTRAL, H100, batch=4, seq=512, tp=2, pp=2, **DECODE)
    step = report.pipeline_parallel.step
    assert sum(step.stage_s) == pytest.approx(alone.totals["time_s"], rel=1e-9)
    assert sum(step.predicted_stage_s) == pytest.approx(alone.totals["predicted_time_s"],
                                                        rel=1e-9)
    assert report.totals["time_s"] == pytest.approx(alone.totals["time_s"] + step.transfer_s,
                                                    rel=1e-9)
    # 2 batches of 4 tokens a round of max(latency, 2 x the slowest stage)
    cycle = max(report.totals["time_s"], 2 * max(step.stage_s))
    assert step.tokens_per_s() == pytest.approx(8 / cycle, rel=1e-12)


# -- Qwen2-7B: the QKV bias split with its columns -------------------------------------------

def test_qwen2_stages_hold_the_qkv_bias_split_over_tp():
    # hidden 3584, 28 heads of 128, 4 KV heads, FFN 18944, 28 blocks, vocabulary 152064 (a
    # multiple of 64), untied. At tp 2 a GPU holds of a block QKV 3584 x 4608 / 2 =
    # 8,257,536 and its bias 4608 / 2 = 2,304, O 3584^2 / 2 = 6,422,528 (no bias), gate and up
    # 3584 x 18944 = 67,895,296, down 33,947,648, two norms 7,168: 116,532,480; the embedding
    # and the head 76,032 rows x 3584 = 272,498,688 each; 14 blocks a stage
    report = analyze_model(QWEN2, H100, batch=4, seq=512, tp=2, pp=2, **DECODE)
    block, embed = 116_532_480, 272_498_688
    assert report.pipeline_parallel.stages.blocks == (14, 14)
    assert _weights(report) == [2 * (14 * block + embed), 2 * (14 * block + 3584 + embed)]
    assert _weights(report) == [3_807_906_816, 3_807_913_984]
    # KV: 2 x 2 KV heads x 128 x 2 B x 2048 tokens x 14 blocks x 2 batches in flight
    assert _kv(report) == [58_720_256] * 2
    # the hand-off: 4 tokens x 3584 x 2 B = 28,672 B a tensor, 14,336 a GPU, inside the node
    (h,) = report.pipeline_parallel.step.handoffs
    assert (h.nbytes, h.sent, h.crosses_nodes) == (28_672, 14_336, False)
    assert h.roof_s == pytest.approx(2 * (14_336 / 450e9 + 1 / 2 * 28_672 / 450e9), rel=1e-12)


# -- GPT-2: wte, wpe and ln_f on every stage -------------------------------------------------
# GPT-2 small: wte 50257 x 768 = 38,597,376, wpe 1024 x 768 = 786,432, ln_f 1,536; a block
# ln_1 1,536 + c_attn 768 x 2304 + 2304 + c_proj 768^2 + 768 + ln_2 1,536 + c_fc 768 x 3072 +
# 3072 + c_proj 3072 x 768 + 768 = 7,087,872; 12 blocks: 124,439,808 in all.
GPT2_BLOCK, GPT2_OUTSIDE = 7_087_872, 38_597_376 + 786_432 + 1_536


@pytest.mark.parametrize("pp, blocks", [(2, (6, 6)), (3, (4, 4, 4)), (12, (1,) * 12)])
def test_every_gpt2_stage_holds_wte_wpe_and_ln_f(pp, blocks):
    report = analyze_model(GPT2, H100, batch=2, seq=64, dtype="fp16", pp=pp, **DECODE)
    assert report.pipeline_parallel.stages.blocks == blocks
    assert _weights(report) == [2 * (b * GPT2_BLOCK + GPT2_OUTSIDE) for b in blocks]
    assert _weights(report)[0] == 163_825_152 or pp != 2


def test_gpt2_stages_at_tp_2_hold_wte_split_and_wpe_whole():
    # at tp 2 wte is split by vLLM's padded vocabulary, 50304 / 2 = 25,152 rows x 768 =
    # 19,316,736, wpe (an nn.Embedding) and ln_f whole: 20,104,704 a stage. Each stage holds
    # them, so the two stages hold them once more than tp 2 alone
    alone = analyze_model(GPT2, H100, batch=2, seq=64, dtype="fp16", tp=2, **DECODE)
    report = analyze_model(GPT2, H100, batch=2, seq=64, dtype="fp16", tp=2, pp=2, **DECODE)
    first, second = _weights(report)
    assert first == second
    assert first + second == alone.memory.parts["weights"] + 2 * 20_104_704


# -- tp past the KV heads, stored formats, plain layers, a pipeline as deep as the blocks ----

@pytest.mark.parametrize("tp", [4, 8])
def test_kv_heads_replicated_past_tp_with_the_batches_in_flight(mixed, tp):
    # 2 KV heads: at tp 4 and tp 8 each GPU holds one (QKVParallelLinear replicates them), so
    # a GPU's KV cache a block is 2 x 1 x 64 x 2 B x 2 x 128 tokens = 65,536 B, for each of 2
    # batches in flight; stage 0 runs 3 blocks, stage 1 2 (get_pp_indices: 5 over 2)
    report = analyze_model(mixed, H100, tp=tp, pp=2)
    assert report.tensor_parallel.kv_replicas == tp // 2
    assert _kv(report) == [3 * 2 * 65_536, 2 * 2 * 65_536]


def test_int4_weights_and_fp8_kv_cache_per_stage(mixed):
    # int4 with a group of 128: each matrix 0.5 B a weight plus one fp16 scale a group of 128;
    # the embedding, the LM head (as vLLM keeps it: model.lm_head) and the norms stay bf16.
    # Stage 0: embed, proj_in, 3 blocks; stage 1: 2 blocks, proj_out, the final norm and the
    # head, whose embedding (its vocabulary) is on stage 0
    report = analyze_model(mixed, H100, pp=2, weights="int4", kv_cache="fp8")
    m0 = PROJ + 3 * BLOCK_MATRICES  # 6,946,816
    m1 = 2 * BLOCK_MATRICES + PROJ  # 4,718,592
    first = m0 // 2 + m0 // 128 * 2 + 2 * (EMBED + 3 * 1024)
    second = m1 // 2 + m1 // 128 * 2 + 2 * (2 * 1024 + 512 + HEAD)
    assert _weights(report) == [first, second] == [7_782_400, 6_632_448]
    # fp8 KV: 2 x 2 heads x 64 x 1 B x 256 tokens = 65,536 B a block, 2 batches in flight
    assert _kv(report) == [3 * 2 * 65_536, 2 * 2 * 65_536]


@pytest.mark.parametrize("pp, blocks, spans", [
    # plain layers before the first block ride with the first stage, after the last with the
    # last; 5 over 2: 3, 2; over 3: 2, 2, 1 (the remainder to the second- and third-last)
    (2, (3, 2), (range(0, 5), range(5, 10))),
    (3, (2, 2, 1), (range(0, 4), range(4, 6), range(6, 10))),
    # as deep as the blocks: one each
    (5, (1, 1, 1, 1, 1), (range(0, 3), range(3, 4), range(4, 5), range(5, 6), range(6, 10))),
])
def test_plain_layers_around_repeated_blocks(mixed, pp, blocks, spans):
    report = analyze_model(mixed, H100, pp=pp)
    stages = report.pipeline_parallel.stages
    assert (stages.blocks, stages.spans) == (blocks, spans)
    first = 2 * (EMBED + PROJ + blocks[0] * BLOCK)
    last = 2 * (blocks[-1] * BLOCK + PROJ + 512 + HEAD)
    middle = [2 * b * BLOCK for b in blocks[1:-1]]
    assert _weights(report) == [first, *middle, last]
    assert len(report.pipeline_parallel.step.handoffs) == pp - 1


@pytest.mark.parametrize("logits", ["last", "all"])
def test_a_prefill_step_hands_off_every_token(mixed, logits):
    # a prefill of 2 x 128 tokens: each stage hands on every token's hidden state and residual
    # (2 x 128 x 512 x 2 B = 262,144 B each) whichever logits the head keeps; tokens/s: 2
    # batches of 256 tokens a round
    report = analyze_model(mixed, H100, pp=2, phase="prefill", logits=logits)
    step = report.pipeline_parallel.step
    (h,) = step.handoffs
    assert h.nbytes == 262_144
    assert h.roof_s == pytest.approx(2 * 262_144 / 450e9, rel=1e-12)
    assert h.predicted_s == pytest.approx(2 * (262_144 / 450e9 + 3.4e-6), rel=1e-12)
    assert step.tokens == 256
    cycle = max(sum(step.stage_s) + step.transfer_s, 2 * max(step.stage_s))
    assert step.tokens_per_s() == pytest.approx(2 * 256 / cycle, rel=1e-12)


def test_a_decode_step_hands_off_one_token_a_sequence(mixed):
    (h,) = analyze_model(mixed, H100, pp=2).pipeline_parallel.step.handoffs
    assert h.nbytes == 2 * 512 * 2


@pytest.mark.parametrize("inter, roof, predicted", [
    # a bandwidth alone: no latency, the roof and the prediction alike: 2 x 2,048 B / 100e9
    ("100", 4_096 / 100e9, 4_096 / 100e9),
    # a links.yaml name: InfiniBand HDR 4x, 25 GB/s, 14 us a tensor
    ("ib-hdr", 4_096 / 25e9, 2 * (2_048 / 25e9 + 14e-6)),
])
def test_the_inter_node_link_as_a_bandwidth_or_a_name(mixed, inter, roof, predicted):
    # one GPU a node: the two stages sit in two nodes
    report = analyze_model(mixed, H100, pp=2, gpus_per_node=1, inter=inter)
    (h,) = report.pipeline_parallel.step.handoffs
    assert h.crosses_nodes and not h.gathered
    assert h.roof_s == pytest.approx(roof, rel=1e-12)
    assert h.predicted_s == pytest.approx(predicted, rel=1e-12)


# -- hostile inputs: one line, exit 2 ----------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("--pp", "0"), ("--pp", "-1"), ("--pp", "99999999999999999999"), ("--pp", "1.5"),
    ("--pp", "two"), ("--pp", "2", "--mode", "train", "--phase", "prefill"),
    ("--pp", "2", "--mode", "train"), ("--pp", "2", "--measure"),
    ("--pp", "2", "--data-parallel", "2"), ("--inter", "100"), ("--inter", "ib-ndr"),
    ("--pp", "2", "--inter", "0"), ("--pp", "2", "--inter", "nowhere"), ("--pp", "6"),
])
def test_hostile_pipelines_are_one_line(invoke, mixed, args):
    result = invoke("analyze", mixed, "--hw", H100, *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output


def test_a_cnn_with_a_pipeline_is_one_line(invoke):
    resnet = Path(__file__).resolve().parents[1] / "examples" / "resnet50.yaml"
    result = invoke("analyze", resnet, "--hw", H100, "--mode", "inference", "--pp", "2")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {resnet}: pipeline parallelism splits transformer blocks; the model has none "
        f"(use --pp 1)"]


@pytest.mark.parametrize("command", [  # (--pp itself they serve: test_serving_pp_whatif.py)
    ("compare", "--hw", H100, "--hw", "a100-sxm4-80gb", "--inter", "ib-ndr"),
    ("sweep", "--hw", H100, "--batch", "1,2", "--inter", "50"),
])
def test_compare_and_sweep_refuse_an_inter_node_link_without_a_pipeline(invoke, mixed,
                                                                         command):
    result = invoke(command[0], mixed, *command[1:])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")


# -- what every format says: nothing contradicts the header --------------------------------

def test_an_inter_node_link_given_but_unused_is_said(invoke, mixed):
    # tp 1 x pp 2 fits an 8-GPU node: no hand-off crosses nodes, so --inter carries nothing;
    # said in the header, not dropped (plan's default, not given, is not mentioned)
    said = " ".join(invoke("analyze", mixed, "--hw", H100, "--pp", "2", "--inter",
                           "ib-hdr").output.split())
    assert "(--inter ib-hdr unused: the 2 GPUs sit in one node of 8)" in said
    default = " ".join(invoke("analyze", mixed, "--hw", H100, "--pp", "2").output.split())
    assert "unused" not in default
    across = " ".join(invoke("analyze", mixed, "--hw", H100, "--pp", "2", "--gpus-per-node",
                             "1", "--inter", "ib-hdr").output.split())
    assert "unused" not in across and "between nodes on InfiniBand HDR 4x" in across


def test_the_totals_say_they_sum_one_gpu_of_each_stage(invoke, mixed):
    # the header says every figure is one GPU's of its stage; the totals line sums the stages:
    # its parameters are the whole model's at tp 1, EMBED + 2 x PROJ + 5 x BLOCK + 512 + HEAD =
    # 15,857,152 (15.9 M), not one GPU's (stage 0 holds 9,047,040)
    report = analyze_model(mixed, H100, pp=2)
    assert report.totals["parameters"] == EMBED + 2 * PROJ + 5 * BLOCK + 512 + HEAD
    text = " ".join(invoke("analyze", mixed, "--hw", H100, "--pp", "2").output.split())
    assert ("15.9 M parameters; these totals: one batch through one GPU of each of the 2 "
            "stages") in text


def test_the_memory_line_names_the_stage_on_an_entry_without_a_capacity(invoke, mixed):
    # a CPU entry states no capacity: the memory line still says whose memory it is
    text = " ".join(invoke("analyze", mixed, "--hw", "xeon-platinum-8180", "--dtype", "fp32",
                           "--pp", "2", "--intra", "10").output.split())
    assert ("memory (one GPU of stage 0, the most loaded; the KV cache of its layers for the 2 "
            "batches in flight, each batch below one of them): ") in text
    assert "states no capacity, so whether it fits is not checked" in text


@pytest.mark.parametrize("tp, gpus_per_node, stage, ranks", [
    # ranks tp fastest, then pp: stage 1 of tp 2 runs ranks 2 and 3, in nodes 0 and 1 of 3
    (2, 3, 1, "2 to 3"),
    # stage 1 of tp 4 on nodes of 6: ranks 4 to 7, in nodes 0 and 1
    (4, 6, 1, "4 to 7"),
])
def test_a_stage_whose_tensor_parallel_group_straddles_two_nodes_is_one_line(
        invoke, mixed, tp, gpus_per_node, stage, ranks):
    result = invoke("analyze", mixed, "--hw", H100, "--pp", "2", "--tp", tp, "--gpus-per-node",
                    gpus_per_node, "--intra", "100")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {mixed}: tensor parallelism {tp} x pipeline parallelism 2 on nodes of "
        f"{gpus_per_node} GPUs puts stage {stage}'s tensor-parallel group (ranks {ranks}) in two "
        f"nodes, its all-reduces between them, which is not modelled: give a tp that divides "
        f"--gpus-per-node (--tp)"]


def test_tensor_parallel_groups_inside_nodes_are_taken_though_tp_does_not_divide_them(mixed):
    # tp 2 x pp 2 on nodes of 6 (2 does divide 6) and on nodes of 4: every group in one node
    for gpus_per_node in (4, 6):
        report = analyze_model(mixed, H100, tp=2, pp=2, gpus_per_node=gpus_per_node,
                               intra="100")
        assert report.pipeline_parallel.nodes == 1


WIDEN = """\
name: widen
batch: 2
seq: 16
dtype: bf16
mode: inference
phase: decode
layers:
  - {type: embedding, name: embed, vocab: 4096, dim: 512}
  - {type: transformer, name: small, hidden: 512, heads: 8, kv_heads: 2, ffn: 1024,
     gated: true, causal: true, norm: rmsnorm, repeat: 2}
  - {type: linear, name: up, in: 512, out: 1024}
  - {type: transformer, name: big, hidden: 1024, heads: 8, kv_heads: 2, ffn: 2048,
     gated: true, causal: true, norm: rmsnorm, repeat: 2}
  - {type: norm, name: norm, dim: 1024, norm: rmsnorm}
  - {type: linear, name: lm_head, in: 1024, out: 4096}
"""


def test_a_stage_ending_in_a_widening_layer_hands_off_its_width(tmp_path):
    # 4 blocks over 2 stages: stage 0 runs embed, small.1-2 and `up` (a plain layer goes with
    # the block before it), whose output, 1024 wide, is what stage 1's first block reads:
    # 2 tokens x 1024 x 2 B = 4,096 B a tensor, not the last block's 512 (2,048 B); at tp 2
    # (`up` whole on each GPU) each GPU sends half, 2,048 B
    path = tmp_path / "widen.yaml"
    path.write_text(WIDEN)
    pp = analyze_model(path, H100, pp=2).pipeline_parallel
    assert pp.stages.names == (("embed", "up"), ("big.1", "lm_head"))
    (h,) = pp.step.handoffs
    assert h.nbytes == 4_096
    (h,) = analyze_model(path, H100, pp=2, tp=2).pipeline_parallel.step.handoffs
    assert (h.nbytes, h.sent) == (4_096, 2_048)
