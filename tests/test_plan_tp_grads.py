"""plan's once-a-step all-reduce over the tensor-parallel group of the gradients of the
parameters every GPU of the group holds whole (``parallel_comm.duplicated_parameters``,
``_tp_grad_comm``): Megatron-Core's ``finalize_model_grads`` sums them with
``_allreduce_non_tensor_model_parallel_grads`` after the data-parallel reduce, each parameter
marked ``sequence_parallel`` (under sequence parallelism) and the q / k layernorms. Every figure
below is worked out by hand from the published configs (examples/hf, SOURCES.md) and the ring
formula of ``analysis.collectives``: 2 (p - 1) / p x bytes / B + 2 (p - 1) a, inside an H100 node
B = 450 GB/s, a = 3.4 us a step (NCCL's NVLink hwLat)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from roofline.analysis.collectives import Fabric
from roofline.analysis.parallel import Layout, evaluate, shard_network
from roofline.analysis.parallel_comm import duplicated_parameters
from roofline.analysis.plan import make_fabric, plan_layouts
from roofline.hardware.catalog import load_hardware
from roofline.hardware.links import links
from roofline.model.network import load_network, network_from_yaml
from roofline.output.plan import best_lines, plan_html, plan_json, plan_markdown, plan_table
from roofline.output.plan_csv import plan_csv

HF = Path(__file__).parent.parent / "examples" / "hf"


def _h100() -> Fabric:
    return Fabric(links()["nvswitch-h100"], links()["ib-ndr"], 8)


def _ring_h100(nbytes: int, p: int) -> float:
    """A ring all-reduce of ``nbytes`` over ``p`` GPUs of an H100 node (module docstring)."""
    return 2 * (p - 1) / p * nbytes / 450e9 + 2 * (p - 1) * 3.4e-6


def _net(name: str, **overrides):
    return load_network(HF / f"{name}.json").with_overrides(
        batch=overrides.pop("batch", 8), seq=overrides.pop("seq", 4096), optimizer="adam",
        **overrides)


def test_llama_2_7b_at_tp_8_all_reduces_its_rmsnorms():
    """Llama-2-7B (hidden 4096, 32 blocks, RMSNorms: a scale each, no bias): every GPU of tp 8
    holds the two norms of each block and the final norm whole and, under sequence parallelism,
    runs them on its T / 8 tokens: 32 x 2 x 4096 + 4096 = 266,240 parameters, bf16 gradients
    (no fp32 accumulation buffer in the config) 532,480 B. Their all-reduce over the 8 GPUs:
    2 x 7/8 x 532,480 / 450e9 = 2.0708 us of bandwidth and 14 x 3.4 = 47.6 us of latency. The
    step (dp 1: no data-parallel reduce) is the pipeline, then it, then the optimizer."""
    net = _net("llama-2-7b", batch=1)
    result = evaluate(net, load_hardware("h100"), Layout(tp=8, sequence_parallel=True), 1,
                      _h100())
    stage = result.stages[0]
    assert stage.tp_grad_bytes == (32 * 2 * 4096 + 4096) * 2 == 532_480
    assert stage.tp_grad_s == pytest.approx(2 * 7 / 8 * 532_480 / 450e9 + 14 * 3.4e-6)
    assert stage.tp_grad_s == pytest.approx(_ring_h100(532_480, 8))
    for r in (result, result.predicted):
        assert r.parts["tp_grad_allreduce_s"] == stage.tp_grad_s
        assert r.step_s == pytest.approx(r.pipeline_s + stage.tp_grad_s + r.tail.optimizer_s)
        assert sum(v for k, v in r.parts.items() if k != "dp_comm_overlapped_s") == \
            pytest.approx(r.step_s)
    data = result.to_dict()
    assert data["tp_grad_allreduce_bytes"] == 532_480
    assert data["parts"]["tp_grad_allreduce_s"] == stage.tp_grad_s


def test_llama_2_7b_stages_each_all_reduce_their_own():
    """pp 2 at tp 8: stage 0 holds the embedding and blocks 0-15, 16 x 2 x 4096 = 131,072
    norm parameters (262,144 B); stage 1 blocks 16-31 and the final norm, 135,168 (270,336 B),
    the largest, which the JSON says; with an fp32 gradient buffer (``--grad-accumulation
    fp32``, Megatron-LM's ``--accumulate-allreduce-grads-in-fp32``) 4 B each: 540,672 B."""
    hw, fabric = load_hardware("h100"), _h100()
    layout = Layout(tp=8, pp=2, sequence_parallel=True)
    result = evaluate(_net("llama-2-7b", batch=2), hw, layout, 2, fabric)
    assert [s.tp_grad_bytes for s in result.stages] == [262_144, 270_336]
    assert [s.tp_grad_s for s in result.stages] == pytest.approx(
        [_ring_h100(262_144, 8), _ring_h100(270_336, 8)])
    assert result.to_dict()["tp_grad_allreduce_bytes"] == 270_336
    fp32 = evaluate(_net("llama-2-7b", batch=2, grad_accumulation="fp32"), hw, layout, 2,
                    fabric)
    assert [s.tp_grad_bytes for s in fp32.stages] == [524_288, 540_672]


def test_deepseek_v3_at_tp_8_by_hand():
    """DeepSeek-V3 (hidden 7168, RMSNorms, q_lora_rank 1536, kv_lora_rank 512, rope 64, 256
    routed experts; 3 dense blocks, then 58 MoE ones) at tp 8, pp 16, ep 8 (1,024 GPUs).
    Every GPU of a tensor-parallel group holds whole, and under sequence parallelism runs on its
    T / 8 tokens:
    - the down projections q_a 7168 x 1536 = 11,010,048 and kv_a 7168 x (512 + 64) = 4,128,768
      (Megatron-Core's ``linear_kv_down_proj`` is hidden -> kv_lora_rank + qk_pos_emb_head_dim;
      the code's ``qkv_a`` is both, 7168 x 2112 = 15,138,816);
    - the latent norms 1536 + 512 = 2,048 and the block's two norms 2 x 7168 = 14,336;
    so a dense block 15,155,200; an MoE block adds its router 7168 x 256 = 1,835,008:
    16,990,208. The 61 blocks over 16 stages: 13 of 4, then 3 of 3. Stage 0 (with the
    embedding, whose table is vocabulary-parallel) blocks 0-3, 3 dense and 1 MoE: 62,455,808;
    stages 1-12 four MoE: 67,960,832; stages 13-14 three: 50,970,624; stage 15 three and the
    final norm (7,168): 50,977,792. In bf16 (2 B a gradient), the largest 135,921,664 B, whose
    all-reduce over 8 GPUs takes 2 x 7/8 x 135,921,664 / 450e9 = 528.6 us + 47.6 us."""
    dense = 7168 * 1536 + 7168 * (512 + 64) + (1536 + 512) + 2 * 7168
    moe = dense + 7168 * 256
    assert (dense, moe) == (15_155_200, 16_990_208)
    stages = [3 * dense + moe] + [4 * moe] * 12 + [3 * moe] * 2 + [3 * moe + 7168]
    assert stages[:3] == [62_455_808, 67_960_832, 67_960_832]
    assert stages[-2:] == [50_970_624, 50_977_792]
    net = _net("deepseek-v3", batch=8, seq=1024)
    layout = Layout(tp=8, pp=16, dp=8, ep=8, zero=1, sequence_parallel=True)
    result = evaluate(net, load_hardware("h100"), layout, 8, _h100())
    assert [s.tp_grad_bytes for s in result.stages] == [2 * n for n in stages]
    assert max(s.tp_grad_bytes for s in result.stages) == 135_921_664
    assert result.stages[1].tp_grad_s == pytest.approx(
        2 * 7 / 8 * 135_921_664 / 450e9 + 14 * 3.4e-6)
    sharded = shard_network(net, 8, 8)
    blocks = [run.layer for run in sharded.layer_runs if run.layer.name in ("blk", "moe_blk")]
    assert [duplicated_parameters(b, True) for b in blocks] == [dense, moe]
    # without the query latent (DeepSeek-V2-Lite's form) kv_a and its norm only: q is split
    assert duplicated_parameters(replace(blocks[0], q_lora_rank=0), True) == \
        7168 * 576 + 512 + 2 * 7168


def test_no_tensor_parallelism_no_all_reduce():
    """tp 1 (dp 8): every GPU runs every token through its own copy: nothing to sum over a
    tensor-parallel group, whatever the model holds."""
    result = evaluate(_net("llama-2-7b", batch=8), load_hardware("h100"), Layout(dp=8), 8,
                      _h100())
    assert [s.tp_grad_bytes for s in result.stages] == [0]
    assert result.parts["tp_grad_allreduce_s"] == 0.0
    assert result.to_dict()["tp_grad_allreduce_bytes"] == 0


def test_without_sequence_parallelism_only_query_and_key_norms():
    """Without sequence parallelism every GPU runs the norms, the router and the down
    projections on all T tokens: whole gradients, no sum (Megatron-Core reduces a
    ``sequence_parallel`` parameter only under it). The query and key norms of Qwen3 (head_dim
    128, one scale each) are summed whatever it (``qk_layernorm``): each GPU normalizes its own
    heads. Qwen3-8B (hidden 4096, 36 blocks) at tp 8: without, 36 x 2 x 128 = 9,216 parameters;
    with, 36 x (2 x 4096 + 2 x 128) + 4096 = 308,224. Llama-2-7B without: none."""
    qwen = shard_network(_net("qwen3-8b"), 8)
    assert sum(duplicated_parameters(run.layer, False) * run.count
               for run in qwen.layer_runs) == 36 * 2 * 128 == 9_216
    assert sum(duplicated_parameters(run.layer, True) * run.count
               for run in qwen.layer_runs) == 36 * (2 * 4096 + 2 * 128) + 4096 == 308_224
    hw, fabric = load_hardware("h100"), _h100()
    off = evaluate(_net("llama-2-7b", batch=1), hw, Layout(tp=8), 1, fabric)
    assert off.stages[0].tp_grad_bytes == 0 and off.parts["tp_grad_allreduce_s"] == 0.0


def test_layernorm_and_row_parallel_biases_by_hand():
    """GPT-2 (hidden 768, 12 blocks, layernorms: a scale and a shift each, ``bias: all``):
    a block's two norms 2 x 2 x 768 = 3,072 and the biases of its row-parallel projections,
    ``proj``'s and ``ffn_down``'s, 768 each (the column-parallel QKV's and ``ffn_up``'s are
    split): 4,608; the 12 blocks and ln_f (1,536): 56,832. An MoE block with ``bias: all``
    holds ``proj``'s bias whole but not its routed experts' (their expert-tensor-parallel group
    gathers every row routed to them: whole gradients), and a shared expert's down bias: hidden
    64, layernorm, 4 experts: norms 256, router 256, proj's bias 64: 576; 640 with a shared
    expert."""
    gpt2 = shard_network(_net("gpt2", seq=1024), 4)
    assert sum(duplicated_parameters(run.layer, True) * run.count
               for run in gpt2.layer_runs) == 12 * (2 * 2 * 768 + 2 * 768) + 2 * 768 == 56_832
    moe = network_from_yaml("""
batch: 1
seq: 64
dtype: bf16
mode: train
layers:
  - {type: transformer, name: moe, hidden: 64, heads: 4, ffn: 128, experts: 4, top_k: 2,
     bias: all}
  - {type: transformer, name: shared, hidden: 64, heads: 4, ffn: 128, experts: 4, top_k: 2,
     bias: all, shared_ffn: 128}
""")
    plain, shared = (run.layer for run in shard_network(moe, 2).layer_runs)
    assert duplicated_parameters(plain, True) == 2 * 2 * 64 + 64 * 4 + 64 == 576
    assert duplicated_parameters(shared, True) == 576 + 64


def test_plan_shows_it_beside_the_data_parallel_reduce():
    """The JSON's parts and the CSV's columns hold the all-reduce's time after the data-parallel
    parts, and its bytes beside one block's all-reduce; the best layout's lines say it. Llama-2-7B
    on 8 H100s at tp 8: 532,480 B (``test_llama_2_7b_at_tp_8_all_reduces_its_rmsnorms``)."""
    hw = load_hardware("h100")
    plan = plan_layouts(_net("llama-2-7b", batch=1), hw, [8], 1, make_fabric(hw), tp=[8],
                        micro_batch=[1])
    lay = json.loads(plan_json(plan))["counts"][0]["layouts"][0]
    assert list(lay["parts"])[-3:] == ["dp_comm_overlapped_s", "tp_grad_allreduce_s",
                                       "optimizer_s"]
    assert lay["tp_grad_allreduce_bytes"] == 532_480
    assert lay["parts"]["tp_grad_allreduce_s"] == pytest.approx(_ring_h100(532_480, 8))
    header, row = (line.split(",") for line in plan_csv(plan).splitlines()[:2])
    cell = dict(zip(header, row))
    assert int(cell["tp_grad_allreduce_bytes"]) == 532_480
    assert float(cell["tp_grad_allreduce_s"]) == lay["parts"]["tp_grad_allreduce_s"]
    assert float(cell["predicted_tp_grad_allreduce_s"]) == \
        lay["predicted_parts"]["tp_grad_allreduce_s"]
    text = "\n".join(best_lines(plan.best))
    assert "tp grad allreduce" in text and "532 kB (the largest stage's)" in text
    for page in (plan_table(plan), plan_markdown(plan), plan_html(plan)):
        assert "532 kB (the largest stage" in page and "tp grad allreduce" in page
