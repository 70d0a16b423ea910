"""Serving over a pipeline of stages (``analyze --pp N``, ``analysis.serving_pp``): every
figure worked by hand from vLLM's rules (cited per test) and the link figures of links.yaml
(NVSwitch H100: 450 GB/s a direction, 3.4 us a step; InfiniBand NDR 4x: 50 GB/s, 14 us).

The small model: a Llama-like decoder of 5 blocks, hidden 1024, 16 heads of 64, 8 KV heads,
a gated FFN of 2816, vocabulary 32000, bf16. One block's parameters: QKV 1024 x (1024 + 2 x
512) = 2,097,152, output projection 1024 x 1024 = 1,048,576, gate and up 2 x 1024 x 2816 =
5,767,168, down 2816 x 1024 = 2,883,584, two RMSNorms 2 x 1024: 11,798,528."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analysis.serving_pp import vllm_stage_blocks
from roofline.api import analyze_model
from roofline.errors import InputError

H100 = "h100-sxm5-80gb"
LLAMA_405B = Path(__file__).resolve().parents[1] / "examples" / "hf" / "llama-3.1-405b.json"
BERT = Path(__file__).resolve().parents[1] / "examples" / "hf" / "bert-base-uncased.json"
BLOCK = 11_798_528  # one block's parameters (module docstring)
EMBED = 32_000 * 1024  # the embedding's, and the LM head's (untied)

SMALL = """\
name: llama-5
batch: 4
seq: 64
dtype: bf16
mode: inference
phase: decode
layers:
  - {type: embedding, name: embed, vocab: 32000, dim: 1024}
  - {type: transformer, name: blk, hidden: 1024, heads: 16, kv_heads: 8, ffn: 2816,
     gated: true, causal: true, norm: rmsnorm, rotary: true, repeat: 5}
  - {type: norm, name: norm, dim: 1024, norm: rmsnorm}
  - {type: linear, name: lm_head, in: 1024, out: 32000}
"""


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "llama-5.yaml"
    path.write_text(SMALL)
    return path


@pytest.mark.parametrize("blocks, pp, expected", [
    (5, 2, (3, 2)),  # 5 // 2 = 2 each; the remainder 1 to the second-last stage
    (10, 4, (2, 3, 3, 2)),  # remainder 2: the second- and third-last
    (11, 4, (3, 3, 3, 2)),  # remainder 3: every stage but the last
    (7, 3, (2, 3, 2)),
    (126, 2, (63, 63)),  # Llama-3.1-405B
    (8, 8, (1,) * 8),
])
def test_blocks_split_as_vllms_get_pp_indices(blocks, pp, expected):
    # vllm/distributed/utils.py, get_pp_indices: partitions = [blocks // pp] * pp, then
    # partitions[-i] += 1 for i in 2 .. remainder + 1 (never the last stage, which holds the
    # final norm and the LM head)
    assert vllm_stage_blocks(blocks, pp) == expected


def test_stages_hold_the_embedding_first_and_the_head_last(small):
    # 5 blocks at pp 2: stage 0 the embedding and blocks 1-3, stage 1 blocks 4-5, the final
    # norm and the LM head (LlamaModel: embed_tokens on the first rank, norm and lm_head on the
    # last)
    pp = analyze_model(small, H100, pp=2).pipeline_parallel
    assert pp.stages.names == (("embed", "blk.3"), ("blk.4", "lm_head"))
    assert pp.stages.spans == (range(0, 4), range(4, 8))
    assert pp.stages.blocks == (3, 2)


def test_memory_per_gpu_is_its_stages_weights_and_kv_cache_for_the_batches_in_flight(small):
    # tp 1, pp 2, batch 4, a decode step at seq 64. Weights (bf16, 2 B): stage 0 the embedding
    # and 3 blocks, stage 1 2 blocks, the final norm and the LM head. KV cache: 2 (K and V) x 8
    # KV heads x 64 x 64 keys x 4 sequences x 2 B = 524,288 a block, for each of the pp = 2
    # batches in flight (vLLM V1's batch queue of max_concurrent_batches = pp; V0's pp
    # schedulers with num_gpu_blocks // pp each)
    report = analyze_model(small, H100, pp=2)
    first, second = report.pipeline_parallel.stages.memories
    assert first.parts["weights"] == 2 * (EMBED + 3 * BLOCK) == 136_327_168
    assert second.parts["weights"] == 2 * (2 * BLOCK + 1024 + EMBED) == 112_732_160
    assert first.parts["kv_cache"] == 2 * 3 * 524_288
    assert second.parts["kv_cache"] == 2 * 2 * 524_288
    # the report's memory: the most loaded stage's (stage 0), its fitting batch every stage's
    assert report.memory.parts == first.parts
    assert report.memory.max_batch == min(first.max_batch, second.max_batch)


def test_a_decode_steps_hand_off_inside_one_node(small):
    # IntermediateTensors of a Llama-like model: hidden_states and residual (LlamaModel.forward),
    # each batch x hidden x 2 B = 4 x 1024 x 2 = 8,192 B; tp 1 x pp 2 fits an 8-GPU node: over
    # NVSwitch, each tensor sent on its own (send_tensor_dict): roof 16,384 / 450e9, predicted
    # 2 x (8,192 / 450e9 + 3.4 us)
    step = analyze_model(small, H100, pp=2).pipeline_parallel.step
    (h,) = step.handoffs
    assert h.tensors == ("hidden_states", "residual")
    assert (h.nbytes, h.sent, h.gathered, h.crosses_nodes) == (8192, 8192, False, False)
    assert h.link.name == "nvswitch-h100"
    assert h.roof_s == pytest.approx(16_384 / 450e9, rel=1e-12)
    assert h.predicted_s == pytest.approx(2 * (8192 / 450e9 + 3.4e-6), rel=1e-12)


def test_a_hand_off_between_nodes_takes_the_inter_node_link(small):
    # one GPU a node: the stages sit in two nodes, InfiniBand NDR (plan's default, 50 GB/s,
    # NCCL's 14 us a step): 2 x (8,192 / 50e9 + 14 us); --inter 25 (GB/s, no latency stated):
    # 16,384 / 25e9 both ways
    (h,) = analyze_model(small, H100, pp=2, gpus_per_node=1).pipeline_parallel.step.handoffs
    assert h.crosses_nodes and h.link.name == "ib-ndr"
    assert h.predicted_s == pytest.approx(2 * (8192 / 50e9 + 14e-6), rel=1e-12)
    (h,) = analyze_model(small, H100, pp=2, gpus_per_node=1,
                         inter="25").pipeline_parallel.step.handoffs
    assert h.roof_s == pytest.approx(16_384 / 25e9, rel=1e-12)
    assert h.predicted_s == pytest.approx(16_384 / 25e9, rel=1e-12)


def test_the_step_is_one_batch_through_every_stage_and_the_hand_off(small):
    # the step time: the stages' GEMMs and ops one after another (tp 1: no all-reduce) plus
    # the hand-off; with 2 batches in flight a batch comes round every max(latency, 2 x the
    # slowest stage), 2 batches of 4 tokens a round
    one = analyze_model(small, H100)
    report = analyze_model(small, H100, pp=2)
    step = report.pipeline_parallel.step
    assert sum(step.stage_s) == pytest.approx(one.totals["time_s"], rel=1e-12)
    assert report.totals["time_s"] == pytest.approx(one.totals["time_s"] + step.transfer_s,
                                                    rel=1e-12)
    assert report.totals["pp_comm_time_s"] == step.transfer_s
    assert report.totals["predicted_time_s"] == pytest.approx(
        sum(step.predicted_stage_s) + step.predicted_transfer_s, rel=1e-12)
    cycle = max(report.totals["time_s"], 2 * max(step.stage_s))
    assert step.tokens_per_s() == pytest.approx(2 * 4 / cycle, rel=1e-12)
    assert "tensor_parallel" not in report.to_dict()  # tp 1: no tensor-parallel group


def test_a_generations_hand_offs_are_in_its_times_and_two_batches_make_its_tokens(small):
    # prompt 32, generate 8, batch 4: the prefill hands off 4 x 32 tokens x 1024 x 2 B x 2
    # tensors = 524,288 B, each decode step 4 x 1024 x 2 x 2 = 16,384 B, on NVSwitch
    alone = analyze_model(small, H100, prompt=32, generate=8).generation
    report = analyze_model(small, H100, prompt=32, generate=8, pp=2)
    g, pp = report.generation, report.pipeline_parallel
    assert g.ttft_s == pytest.approx(alone.ttft_s + 524_288 / 450e9, rel=1e-9)
    assert g.decode_s == pytest.approx(alone.decode_s + 7 * 16_384 / 450e9, rel=1e-9)
    assert pp.generation_transfer() == pytest.approx((524_288 + 7 * 16_384) / 450e9, rel=1e-12)
    # tokens/s: 2 batches in flight, each round of a phase max(its latency, 2 x its slowest
    # stage's share of its stages' time)
    assert g.in_flight == 2
    assert g.latency_s <= g.steady_s <= 2 * g.latency_s
    assert g.tokens_per_s == pytest.approx(2 * 4 * 8 / g.steady_s, rel=1e-12)
    assert g.tokens_per_s_per_sequence == pytest.approx(8 / g.latency_s, rel=1e-12)


def test_llama_405b_fits_two_nodes_at_tp_8_pp_2_where_tp_8_alone_does_not():
    # Llama-3.1-405B (examples/hf/llama-3.1-405b.json: hidden 16384, 126 blocks, 128 heads, 8
    # KV heads of 128, FFN 53248, vocabulary 128256, untied). One GPU of tp 8 holds of a block
    # (QKV 16384 x 18432 + O 16384^2 + gate/up 2 x 16384 x 53248 + down 53248 x 16384) / 8 =
    # 398,458,880 and its two norms whole, 32,768: 398,491,648; of the embedding and the LM
    # head 128256 / 8 = 16032 rows x 16384 = 262,668,288 each; the final norm 16,384.
    # tp 8: all 126 blocks, 101,470,601,216 B in bf16, past the 85,017,493,504 B CUDA reports
    tp8 = analyze_model(LLAMA_405B, H100, batch=1, mode="inference", phase="decode", seq=1024,
                        tp=8)
    assert tp8.memory.parts["weights"] == 2 * (126 * 398_491_648 + 2 * 262_668_288 + 16_384)
    assert not tp8.memory.fits
    # tp 8 x pp 2: 63 blocks a stage (get_pp_indices), stage 0 with the embedding, stage 1
    # with the final norm and the head: 50,735,284,224 and 50,735,316,992 B, about the whole
    # model's 405,853,388,800 parameters x 2 B / 16 GPUs = 50,731,673,600 (the norms each GPU
    # keeps whole make the rest)
    both = analyze_model(LLAMA_405B, H100, batch=1, mode="inference", phase="decode",
                         seq=1024, tp=8, pp=2)
    first, second = both.pipeline_parallel.stages.memories
    assert first.parts["weights"] == 2 * (63 * 398_491_648 + 262_668_288) == 50_735_284_224
    assert second.parts["weights"] == 2 * (63 * 398_491_648 + 16_384 + 262_668_288)
    assert second.parts["weights"] == pytest.approx(405_853_388_800 * 2 / 16, rel=1e-4)
    assert both.memory.fits and both.memory.max_batch >= 1
    assert both.pipeline_parallel.stages.heaviest == 1
    # the hand-off: tp 8 fills a node, so stage 0's GPUs send to the next node's over
    # InfiniBand NDR, each its 1/8 of each tensor (1 x 16384 x 2 B / 8 = 4,096 B), then all-
    # gather it over NVSwitch (ring, 7 steps): per tensor 4,096 / 50e9 + 14 us + 7/8 x 32,768 /
    # 450e9 + 7 x 3.4 us
    (h,) = both.pipeline_parallel.step.handoffs
    assert h.crosses_nodes and h.gathered and (h.nbytes, h.sent) == (32_768, 4_096)
    assert h.roof_s == pytest.approx(2 * (4096 / 50e9 + 7 / 8 * 32_768 / 450e9), rel=1e-12)
    assert h.predicted_s == pytest.approx(
        2 * (4096 / 50e9 + 14e-6 + 7 / 8 * 32_768 / 450e9 + 7 * 3.4e-6), rel=1e-12)


def test_every_format_says_the_figures_are_one_gpus_of_tp_x_pp(invoke, small):
    args = ("analyze", small, "--hw", H100, "--pp", "2")
    text = " ".join(invoke(*args).output.split())
    assert ("pipeline-parallel over 2 stages of tp 1 (2 GPUs, 1 node of 8): every figure below "
            "is one GPU's of its stage" in text)
    assert "stage 0 embed .. blk.3 (3 blocks), stage 1 blk.4 .. lm_head (2 blocks)" in text
    assert "pipeline, in the step time above: stages" in text and "the slowest stage" in text
    assert "memory (one GPU of stage 0, the most loaded" in text
    data = json.loads(invoke(*args, "--format", "json").output)
    pp = data["pipeline_parallel"]
    assert (pp["pp"], pp["tp"], pp["gpus"], pp["in_flight_batches"]) == (2, 1, 2, 2)
    assert [s["layers"] for s in pp["stages"]] == [[0, 3], [4, 7]]
    assert pp["step"]["handoffs"][0]["bytes"] == 16_384
    assert data["totals"]["pp_comm_time_s"] == pp["step"]["transfer_time_s"]
    markdown = invoke(*args, "--format", "markdown").output
    assert "pipeline-parallel over 2 stages" in markdown and "pipeline, in the step" in markdown
    csv = invoke(*args, "--format", "csv").output.splitlines()
    assert csv[0].split(",")[:6] == ["hardware", "batch", "mode", "seq", "phase", "pp"]
    assert csv[1].split(",")[5] == "2"
    html = invoke(*args, "--format", "html").output
    assert "pipeline parallelism" in html and "(one GPU of tp 1 x pp 2)" in html


@pytest.mark.parametrize("args, expected", [
    (("--mode", "train", "--seq", "64", "--pp", "2"),
     "Error: {m}: --pp serves an inference step or a generation; a training step's pipeline "
     "is `roofline plan`'s"),
    (("--pp", "6"),
     "Error: {m}: pipeline parallelism 6 is more stages than the model's 5 transformer blocks: "
     "each stage runs one at least (--pp)"),
    (("--inter", "ib-hdr"),
     "Error: --inter: goes with --pp N (the link between nodes a pipeline's stages hand off "
     "over)"),
    (("--pp", "2", "--inter", "no-such-link"), None),
])
def test_refusals_are_one_line(invoke, small, args, expected):
    result = invoke("analyze", small, "--hw", H100, *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    if expected is not None:
        assert lines == [expected.format(m=small)]


def test_models_vllm_serves_no_pipeline_for_are_refused():
    # BERT's blocks are not causal: vLLM's encoders implement no SupportsPP
    with pytest.raises(InputError, match="not causal: vLLM serves a pipeline for decoder "
                                        "models only"):
        analyze_model(BERT, H100, batch=1, seq=128, mode="inference", pp=2)
    mlp = Path(__file__).resolve().parents[1] / "examples" / "mlp-1024-4096-1000.yaml"
    with pytest.raises(InputError, match="splits transformer blocks; the model has none"):
        analyze_model(mlp, H100, mode="inference", pp=2)


def test_gpt2_hands_off_its_hidden_states_only_and_every_stage_holds_its_embeddings():
    # GPT2Model.forward returns IntermediateTensors({"hidden_states": ...}): one tensor of
    # batch x 768 x 2 B (fp16 of --dtype). GPT2Model.__init__ builds wte (50257 x 768), wpe
    # (1024 x 768) and ln_f (2 x 768) on every pipeline rank (none a PPMissingLayer), and the
    # LM head is tied to wte: each stage holds 50257 x 768 + 1024 x 768 + 1536 = 39,385,344
    # parameters besides its blocks, 78,770,688 B in fp16; the whole model holds them once
    gpt2 = Path(__file__).resolve().parents[1] / "examples" / "hf" / "gpt2.json"
    alone = analyze_model(gpt2, H100, batch=2, seq=64, mode="inference", phase="decode",
                          dtype="fp16")
    report = analyze_model(gpt2, H100, batch=2, seq=64, mode="inference", phase="decode",
                           dtype="fp16", pp=2)
    (h,) = report.pipeline_parallel.step.handoffs
    assert h.tensors == ("hidden_states",) and h.nbytes == 2 * 768 * 2
    first, second = report.pipeline_parallel.stages.memories
    assert first.parts["weights"] + second.parts["weights"] == (
        alone.memory.parts["weights"] + 78_770_688)


def test_only_the_hand_offs_between_two_nodes_take_the_inter_node_link(small):
    # pp 4 over nodes of 2 GPUs (tp 1): vLLM numbers ranks tp fastest, then pp, so stages 0-1
    # sit in node 0 and 2-3 in node 1: only the hand-off after stage 1 crosses. 5 blocks over
    # 4 stages: 1 each, the remainder on the second-last (get_pp_indices): 1, 1, 2, 1
    pp = analyze_model(small, H100, pp=4, gpus_per_node=2).pipeline_parallel
    assert pp.stages.blocks == (1, 1, 2, 1)
    assert [h.crosses_nodes for h in pp.step.handoffs] == [False, True, False]
    assert [h.link.name for h in pp.step.handoffs] == ["nvswitch-h100", "ib-ndr", "nvswitch-h100"]
    assert pp.nodes == 2
