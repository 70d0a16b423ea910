"""Activation recomputation timed (0.9.0): the forward work ``recompute`` selective or full
runs again in the backward pass, in analyze's step time (``totals.recompute_*``), in plan's
layouts and in compare's and sweep's step times. Every expected figure is worked by hand here
from the model's sizes (Narayanan et al., SC21, sec. 5.1, eq. 3: full recomputation's
96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) FLOPs an iteration against 72 B s l h^2
(1 + s / (6 h)) + 6 B s h V without; Korthikanti et al. 2022, sec. 5: selective recomputation
runs the attention core again) or summed from the report's own forward items, never read back
from the code's totals."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from roofline import analyze_model, network_from_yaml

# a GPT-style model: an embedding, L blocks (naive attention, MHA, ffn 4h, ungated, not causal,
# dropout on), the output layer to the vocabulary (no activation: it keeps all it reads)
B, S, H, HEADS, L, V = 1, 2048, 4096, 8, 2, 32768
T = B * S  # tokens
GPT = f"""
name: gpt-test
batch: {B}
seq: {S}
dtype: fp16
mode: train
layers:
  - {{type: embedding, vocab: {V}, dim: {H}, name: wte}}
  - {{type: transformer, hidden: {H}, heads: {HEADS}, attention: naive, dropout: 0.1,
      repeat: {L}, name: blk}}
  - {{type: linear, in: {H}, out: {V}, name: lm_head}}
"""
# one block's forward GEMM FLOPs: qkv 2 T 3h h, scores 2 (B heads) s s (h / heads) = 2 T s h,
# context 2 T s h, proj 2 T h h, ffn_up 2 T 4h h, ffn_down 2 T h 4h
BLOCK_FORWARD = 24 * T * H * H + 4 * T * S * H
A100_FP16 = 312e12  # NVIDIA's A100 datasheet: 312 TFLOPS dense fp16 Tensor Core


@pytest.fixture
def gpt(tmp_path):
    path = tmp_path / "gpt.yaml"
    path.write_text(GPT, encoding="utf-8")
    return path


def _analyze(invoke, model, *args):
    return json.loads(invoke("analyze", model, "--hw", "a100", *args, "--format", "json").stdout)


def _block_items(data, key, pass_=None):
    """The report's own GEMMs (``key`` "gemms") or ops of the blocks, of one pass or all."""
    return [item for item in data[key] if item["layer"].startswith("blk.")
            and (pass_ is None or item["pass"] == pass_)]


def test_full_recomputation_runs_every_block_forward_again(invoke, gpt):
    none, full = (_analyze(invoke, gpt, "--recompute", r) for r in ("none", "full"))
    t0, t1 = none["totals"], full["totals"]
    assert full["recompute"] == "full" and none["recompute"] == "none"
    # the blocks' forward GEMMs once more; the output layer has no activation: not again
    assert t1["recompute_gemm_flops"] == L * BLOCK_FORWARD == 1_786_706_395_136
    # the model's FLOPs stay the model's (Megatron-LM: 72 B s L h^2 (1 + s/6h) + 6 B s h V)
    megatron = 72 * B * S * L * H * H + 12 * B * L * S * S * H + 6 * B * S * H * V
    assert t0["gemm_flops"] == t1["gemm_flops"] == megatron
    assert t1["flops"] == t0["flops"]
    # the blocks' GEMM FLOPs with full recomputation over those without: 96 / 72
    blocks = sum(g["flops"] for g in _block_items(none, "gemms"))
    assert blocks == 3 * L * BLOCK_FORWARD
    assert Fraction(blocks + t1["recompute_gemm_flops"], blocks) == Fraction(4, 3)
    # the ops run again too: every forward op of the blocks, at its own FLOPs
    block_ops = sum(o["flops"] for o in _block_items(none, "ops", "forward"))
    assert t1["recompute_flops"] == L * BLOCK_FORWARD + block_ops
    assert t0["recompute_flops"] == t0["recompute_time_s"] == 0


def test_full_recomputation_time_is_a_third_of_the_blocks_gemm_time_when_compute_bound(
        invoke, gpt):
    """Every GEMM here is compute-bound on an A100 (head_dim 512 makes the attention GEMMs so):
    each one's roof is its FLOPs over the 312 TFLOP/s peak, and the blocks' forward GEMMs run
    again add a third of the blocks' GEMM time (96 / 72)."""
    none, full = (_analyze(invoke, gpt, "--recompute", r) for r in ("none", "full"))
    assert none["peak_tflops"] == 312.0
    assert {g["bound"] for g in none["gemms"]} == {"compute"}
    gemm_s = sum(g["time_s"] for g in _block_items(none, "gemms"))
    assert gemm_s == pytest.approx(3 * L * BLOCK_FORWARD / A100_FP16, rel=1e-12)
    t1 = full["totals"]
    # the recomputed time less the recomputed ops' (the blocks' forward ops, each its own
    # roof, summed from the report's list) is the forward GEMMs' FLOPs at the peak
    ops_s = sum(o["time_s"] for o in _block_items(none, "ops", "forward"))
    again_gemm_s = t1["recompute_time_s"] - ops_s
    assert again_gemm_s == pytest.approx(L * BLOCK_FORWARD / A100_FP16, rel=1e-9)
    assert (gemm_s + again_gemm_s) / gemm_s == pytest.approx(4 / 3, rel=1e-9)
    # the step: the model's GEMMs and ops, then the recomputation, roof and predicted
    t0 = none["totals"]
    assert t1["time_s"] == pytest.approx(t0["time_s"] + t1["recompute_time_s"], rel=1e-12)
    predicted_again = sum(item["predicted_time_s"] for key in ("gemms", "ops")
                          for item in _block_items(none, key, "forward"))
    assert t1["predicted_recompute_time_s"] == pytest.approx(predicted_again, rel=1e-9)
    assert t1["predicted_time_s"] == pytest.approx(
        t0["predicted_time_s"] + predicted_again, rel=1e-12)
    assert t1["gemm_time_s"] == t0["gemm_time_s"] and t1["op_time_s"] == t0["op_time_s"]


def test_selective_recomputation_runs_naive_attention_core_again(invoke, gpt):
    data = _analyze(invoke, gpt, "--recompute", "selective")
    t = data["totals"]
    # QK^T 2 b s^2 h and attention over V 2 b s^2 h a block
    assert t["recompute_gemm_flops"] == L * 4 * B * S * S * H
    # its softmax (5 FLOPs a score) and dropout (2) over B heads s s scores, forward
    assert t["recompute_flops"] - t["recompute_gemm_flops"] == L * (5 + 2) * B * HEADS * S * S
    core = [item for key in ("gemms", "ops") for item in _block_items(data, key, "forward")
            if item["layer"].endswith((".scores", ".context", ".attn"))]
    assert {item.get("kind", "gemm") for item in core} == {"gemm", "softmax", "dropout"}
    assert t["recompute_time_s"] == pytest.approx(sum(i["time_s"] for i in core), rel=1e-9)
    assert t["predicted_recompute_time_s"] == pytest.approx(
        sum(i["predicted_time_s"] for i in core), rel=1e-9)


def test_selective_recomputation_with_flash_attention_adds_nothing(invoke, gpt):
    """Flash attention's backward already recomputes the scores (its op's 10 G q s d FLOPs,
    2.5 times the forward's 4): selective has nothing more to run, and says so."""
    data = _analyze(invoke, gpt, "--recompute", "selective", "--attention", "flash")
    t = data["totals"]
    assert (t["recompute_flops"], t["recompute_time_s"], t["predicted_recompute_time_s"]) == (
        0, 0, 0)
    d = H // HEADS
    forward, backward = (next(o for o in data["ops"] if o["kind"] == kind)
                         for kind in ("flash-attention", "flash-attention-backward"))
    assert (forward["flops"], backward["flops"]) == (4 * B * HEADS * S * S * d,
                                                    10 * B * HEADS * S * S * d)
    text = invoke("analyze", gpt, "--hw", "a100", "--recompute", "selective", "--attention",
                  "flash").stdout
    assert "recompute selective: nothing is run again here: flash attention's backward" in text


def test_no_recomputation_adds_nothing_and_inference_runs_none(invoke, gpt, tmp_path):
    data = _analyze(invoke, gpt)
    t = data["totals"]
    assert (data["recompute"], t["recompute_flops"], t["recompute_gemm_flops"],
            t["recompute_time_s"], t["predicted_recompute_time_s"]) == ("none", 0, 0, 0, 0)
    assert t["time_s"] == pytest.approx(t["gemm_time_s"] + t["op_time_s"], rel=1e-12)
    # inference: --recompute refused, as before
    refused = invoke("analyze", gpt, "--hw", "a100", "--mode", "inference", "--recompute",
                     "full")
    assert refused.exit_code == 2
    assert "--recompute is a training setting" in refused.output
    # a file's own recompute in an inference step: kept in the file, nothing run again
    inference = tmp_path / "inference.yaml"
    inference.write_text(GPT.replace("mode: train", "mode: inference\nrecompute: full"),
                         encoding="utf-8")
    data = _analyze(invoke, inference)
    assert data["recompute"] == "none" and data["totals"]["recompute_time_s"] == 0
    assert "recomputation" not in data["not_counted"]


def test_full_recomputation_of_an_mlp_runs_each_activated_product_again(invoke, tmp_path):
    """A linear layer with an activation keeps no pre-activation output under full
    recomputation; its product and bias run again, its activation does not (its output is the
    next layer's input, kept there). A layer without an activation runs nothing again."""
    model = tmp_path / "mlp.yaml"
    model.write_text("batch: 512\ndtype: fp16\nmode: train\nlayers:\n"
                     "  - {type: linear, in: 1024, out: 4096, bias: true, activation: gelu}\n"
                     "  - {type: linear, in: 4096, out: 4096, bias: true, activation: relu}\n"
                     "  - {type: linear, in: 4096, out: 1000, bias: true}\n",
                     encoding="utf-8")
    data = _analyze(invoke, model, "--recompute", "full")
    t = data["totals"]
    products = 2 * 512 * 1024 * 4096 + 2 * 512 * 4096 * 4096
    assert t["recompute_gemm_flops"] == products
    assert t["recompute_flops"] == products + 2 * 512 * 4096  # the biases: 1 FLOP an output
    again = [item for key in ("gemms", "ops") for item in data[key]
             if item["layer"] in ("fc1", "fc2") and item["pass"] == "forward"
             and item.get("kind", "gemm") in ("gemm", "bias")]
    assert len(again) == 4
    assert t["recompute_time_s"] == pytest.approx(sum(i["time_s"] for i in again), rel=1e-12)
    # the memory rule it mirrors: each 512 x 4096 pre-activation output is not kept, and one
    # layer's is back while it is recomputed (analysis.memory)
    kept = _analyze(invoke, model)["memory"]["activations"] - data["memory"]["activations"]
    assert kept == 512 * 4096 * 2


def test_a_repeat_of_a_million_blocks_is_timed_from_one_copy():
    """A deep repeat is never walked copy by copy: its recomputation is one copy's times its
    count (``model.repeats``), exact on the FLOPs."""
    net = network_from_yaml("batch: 1\nseq: 8\ndtype: fp16\nmode: train\nrecompute: full\n"
                            "layers:\n  - {type: embedding, vocab: 64, dim: 64}\n"
                            "  - {type: transformer, hidden: 64, heads: 4, attention: naive, "
                            "repeat: 1000000}\n")
    t = analyze_model(net, "a100").totals
    assert t["recompute_gemm_flops"] == 10**6 * (24 * 8 * 64 * 64 + 4 * 8 * 8 * 64)


def test_a_report_of_every_copy_reads_the_same_recomputation(gpt):
    """``--measure`` gives a report a plain list of every copy's result (analysis.measure): its
    recomputation is found through the step's numbering, the same as the repeat's."""
    from dataclasses import replace

    report = analyze_model(gpt, "a100", recompute="full")
    listed = replace(report, results=tuple(report.results), ops=tuple(report.ops))
    assert listed.totals["recompute_gemm_flops"] == L * BLOCK_FORWARD
    assert listed.totals["recompute_flops"] == report.totals["recompute_flops"]
    assert listed.totals["recompute_time_s"] == pytest.approx(
        report.totals["recompute_time_s"], rel=1e-12)


def test_the_text_report_names_the_recomputation(invoke, gpt):
    text = invoke("analyze", gpt, "--hw", "a100", "--recompute", "full").stdout
    assert "recompute full: +" in text and "run again in the backward pass" in text
    assert "recomputation " in text.split("total: ")[1].split(";")[0]  # in the total's parts
    assert "the recomputed forward work" not in text  # no longer said to be left out


def test_data_parallel_overlap_window_holds_the_recomputation(invoke, gpt):
    """The gradients' all-reduce hides behind the backward pass, which now runs the blocks'
    forward again: the window grows by the recomputed time."""
    args = ("--data-parallel", "8", "--interconnect", "nvlink3")
    none, full = (_analyze(invoke, gpt, "--recompute", r, *args) for r in ("none", "full"))
    window = full["data_parallel"]["backward_s"] - none["data_parallel"]["backward_s"]
    assert window == pytest.approx(full["totals"]["recompute_time_s"], rel=1e-9)


def test_compare_and_sweep_step_times_hold_the_recomputation(invoke, gpt):
    analyzed = {r: _analyze(invoke, gpt, "--recompute", r)["totals"] for r in ("none", "full")}
    for r, t in analyzed.items():
        compared = json.loads(invoke("compare", gpt, "--hw", "a100", "--hw", "h100",
                                     "--recompute", r, "--format", "json").stdout)
        a100 = compared["devices"][0]
        assert a100["time_s"] == pytest.approx(t["time_s"], rel=1e-12)
        assert a100["predicted_time_s"] == pytest.approx(t["predicted_time_s"], rel=1e-12)
        swept = json.loads(invoke("sweep", gpt, "--hw", "a100", "--batch", "1,2", "--recompute",
                                  r, "--format", "json").stdout)
        assert swept["points"][0]["time_s"] == pytest.approx(t["time_s"], rel=1e-12)
        assert swept["points"][0]["predicted_time_s"] == pytest.approx(t["predicted_time_s"],
                                                                       rel=1e-12)
    assert analyzed["full"]["time_s"] > analyzed["none"]["time_s"]


def _layout(invoke, model, recompute, *args):
    out = json.loads(invoke("plan", model, "--hw", "a100", "--pp", "1", "--zero", "0",
                            "--recompute", recompute, "--format", "json", *args).stdout)
    return out, [layout for count in out["counts"] for layout in count["layouts"]]


def test_plan_times_the_recomputed_forward_in_each_micro_batch(invoke, gpt):
    """One GPU, 4 micro-batches of 1: the step is 4 micro-batches' compute and the update, so
    full recomputation adds 4 times the blocks' forward at a micro-batch, which analyze gives
    item by item (summed here from its lists)."""
    args = ("--gpus", "1", "--tp", "1", "--batch", "4", "--micro-batch", "1")
    (plan_none, [none]), (plan_full, [full]) = (_layout(invoke, gpt, r, *args)
                                                for r in ("none", "full"))
    shard = _analyze(invoke, gpt, "--batch", "1")  # the micro-batch's step, no recomputation
    forward = [item for key in ("gemms", "ops") for item in _block_items(shard, key, "forward")]
    roof = sum(i["time_s"] for i in forward)
    predicted = sum(i["predicted_time_s"] for i in forward)
    m = full["micro_batches"]
    assert m == 4
    assert full["step_s"] - none["step_s"] == pytest.approx(m * roof, rel=1e-9)
    assert full["predicted_step_s"] - none["predicted_step_s"] == pytest.approx(
        m * predicted, rel=1e-9)
    assert (full["recompute_s"], full["predicted_recompute_s"]) == pytest.approx(
        (m * roof, m * predicted), rel=1e-9)
    assert none["recompute_s"] == none["predicted_recompute_s"] == 0
    assert full["tokens_per_s"] < none["tokens_per_s"]
    assert any(a.startswith("recomputation runs its forward work again")
               for a in plan_full["assumptions"])
    assert not any("not timed" in a for a in plan_full["assumptions"])


def test_plan_ranks_layouts_by_steps_that_hold_the_recomputation(invoke, tmp_path):
    """Blocks only, two GPUs, tp 1 or 2: full recomputation's forward runs each block's two
    forward all-reduces again (6 a micro-batch, not 4), and each layout's compute grows by its
    blocks' forward; the ranking is by those steps."""
    model = tmp_path / "blocks.yaml"
    model.write_text("batch: 1\nseq: 1024\ndtype: fp16\nmode: train\nlayers:\n"
                     "  - {type: transformer, hidden: 2048, heads: 16, repeat: 4}\n",
                     encoding="utf-8")
    args = ("--gpus", "2", "--tp", "1,2", "--batch", "8", "--micro-batch", "1", "--top", "9")
    (_, nones), (_, fulls) = (_layout(invoke, model, r, *args) for r in ("none", "full"))
    by_tp = {r: {layout["tp"]: layout for layout in layouts}
             for r, layouts in (("none", nones), ("full", fulls))}
    assert set(by_tp["none"]) == set(by_tp["full"]) == {1, 2}
    tp2_none, tp2_full = by_tp["none"][2], by_tp["full"][2]
    assert tp2_full["parts"]["tp_comm_s"] == pytest.approx(1.5 * tp2_none["parts"]["tp_comm_s"],
                                                           rel=1e-12)
    for tp in (1, 2):
        n, f = by_tp["none"][tp], by_tp["full"][tp]
        assert f["parts"]["compute_s"] - n["parts"]["compute_s"] == pytest.approx(
            f["recompute_s"], rel=1e-9)
        assert f["predicted_step_s"] > n["predicted_step_s"]
    for layouts in (nones, fulls):  # fastest predicted first
        steps = [layout["predicted_step_s"] for layout in layouts]
        assert steps == sorted(steps)


def test_a_captured_module_keeps_recompute_left_out(invoke, monkeypatch):
    """A captured module's step is what its run recorded: recompute changes neither its time
    nor its memory, as before, and ``not_counted`` says so."""
    pytest.importorskip("torch")
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).parent.parent / "examples")
    none, full = (_analyze(invoke, "torch_mlp:make", "--mode", "train", "--recompute", r)
                  for r in ("none", "full"))
    assert full["totals"]["recompute_time_s"] == 0
    assert full["totals"]["time_s"] == none["totals"]["time_s"]
    assert "recomputation" in full["not_counted"] and "recomputation" not in none["not_counted"]
