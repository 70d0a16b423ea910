"""compare and sweep served over a pipeline (``--pp N``, 0.9.0): each device or point is what
``analyze --tp T --pp N`` gives on it (the same ``serving_tp.serve``), and every output says its
figures are one GPU's of tp x pp. Worked by hand from Llama-3.1-405B's config
(examples/hf/llama-3.1-405b.json: hidden 16384, 126 blocks, 8 KV heads of 128, bf16: 2 B) and
links.yaml's figures: an H100 SXM node's NVSwitch 450 GB/s a direction, a B200 SXM node's NVLink
Switch 900 GB/s (``plan.SXM_INTRA``), both NCCL's 3.4 us a step; InfiniBand NDR 4x between
nodes, 50 GB/s and 14 us. At tp 8 pp 2 vLLM's ``get_pp_indices`` puts 63 blocks on each stage,
and every hand-off crosses nodes (tp 8 fills an 8-GPU node)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import matplotlib
import pytest
from test_serving_pp import SMALL  # the 5-block Llama-like model.yaml

matplotlib.use("Agg")

from roofline.analysis.whatif import compare, sweep  # noqa: E402
from roofline.api import analyze_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LLAMA_405B = ROOT / "examples" / "hf" / "llama-3.1-405b.json"
H100, B200, A100 = "h100-sxm5-80gb", "b200-sxm-180gb", "a100-sxm4-80gb"
DECODE = {"mode": "inference", "phase": "decode", "seq": 4096}
KV_PER_BATCH = 63 * 2 * 128 * 4096 * 2 * 2  # one GPU of a stage, 2 batches in flight

@pytest.fixture
def small(tmp_path):
    path = tmp_path / "llama-5.yaml"
    path.write_text(SMALL)
    return path


@pytest.fixture(scope="module")
def two_nodes():
    """Llama-3.1-405B, a decode step of batch 32 at seq 4096, tp 8 pp 2 on H100 vs B200."""
    return compare(LLAMA_405B, [H100, B200], batch=32, tp=8, pp=2, **DECODE)


def _handoff(batch, intra_gbs, predicted=False):
    """One hand-off of a decode step at ``batch`` (vLLM's send-allgather): hidden_states and
    residual, each batch x 16384 x 2 B; each of the 8 GPUs sends its 1/8 over InfiniBand NDR
    (S / 8 / 50e9, + 14 us predicted), the next node all-gathers it on its own link (ring: 7/8
    x S / B, + 7 steps of 3.4 us predicted)."""
    nbytes = batch * 16384 * 2
    one = nbytes / 8 / 50e9 + 7 / 8 * nbytes / (intra_gbs * 1e9)
    if predicted:
        one += 14e-6 + 7 * 3.4e-6
    return 2 * one


def test_each_device_is_analyze_pp_on_it(two_nodes):
    c = two_nodes
    assert (c.tp, c.pp) == (8, 2)
    for report in c.reports:
        alone = analyze_model(LLAMA_405B, report.hardware.name, batch=32, tp=8, pp=2, **DECODE)
        assert report.totals == alone.totals
        assert report.memory == alone.memory
        assert report.pipeline_parallel.to_dict() == alone.pipeline_parallel.to_dict()
        assert report.tensor_parallel.to_dict() == alone.tensor_parallel.to_dict()


def test_each_devices_hand_off_on_its_own_node_link_by_hand(two_nodes):
    # batch 32: 1,048,576 B a tensor, 131,072 B a GPU: 2.62144 us on InfiniBand; the
    # all-gather 0.875 x 1048576 / 450e9 = 2.03890 us on the H100's NVSwitch, / 900e9 =
    # 1.01945 us on the B200's NVLink Switch; two tensors:
    #   H100 roof 2 x 4.66034 = 9.32068 us, predicted + 2 x 37.8 us = 84.92068 us
    #   B200 roof 2 x 3.64089 = 7.28178 us, predicted 82.88178 us
    expected = {H100: (9.32068e-6, 84.92068e-6), B200: (7.28178e-6, 82.88178e-6)}
    links = {H100: 450, B200: 900}
    for report in two_nodes.reports:
        name = report.hardware.name
        roof, predicted = expected[name]
        assert _handoff(32, links[name]) == pytest.approx(roof, rel=1e-6)
        assert _handoff(32, links[name], True) == pytest.approx(predicted, rel=1e-6)
        step = report.pipeline_parallel.step
        (h,) = step.handoffs
        assert h.crosses_nodes and h.link.name == "ib-ndr"
        assert (h.roof_s, h.predicted_s) == pytest.approx((roof, predicted), rel=1e-6)
        assert report.totals["pp_comm_time_s"] == h.roof_s
        # two batches in flight: 2 x 32 tokens every max(latency, 2 x the slowest stage)
        cycle = max(report.totals["time_s"], 2 * max(step.stage_s))
        assert step.tokens_per_s() == pytest.approx(64 / cycle, rel=1e-12)
    assert two_nodes.reports[0].pipeline_parallel.fabric.intra.name == "nvswitch-h100"
    assert two_nodes.reports[1].pipeline_parallel.fabric.intra.name == "nvswitch-b200"


def test_compare_json_names_pp_and_each_devices_pipeline(invoke):
    args = (str(LLAMA_405B), "--batch", "32", "--mode", "inference", "--phase", "decode",
            "--seq", "4096", "--tp", "8", "--pp", "2", "--format", "json")
    doc = json.loads(invoke("compare", *args[:1], "--hw", H100, "--hw", B200,
                            *args[1:]).stdout)
    assert (doc["tp"], doc["pp"]) == (8, 2)
    for device in doc["devices"]:
        alone = json.loads(invoke("analyze", args[0], "--hw", device["hardware"],
                                  *args[1:]).stdout)
        assert device["pipeline_parallel"] == alone["pipeline_parallel"]
        assert device["tensor_parallel"] == alone["tensor_parallel"]
        for key in ("pp_comm_time_s", "predicted_pp_comm_time_s", "tp_comm_time_s",
                    "time_s", "predicted_time_s"):
            assert device[key] == alone["totals"][key]
        assert device["memory_bytes"] == alone["memory"]["total_bytes"]
    assert doc["devices"][1]["pp_comm_time_s"] == pytest.approx(7.28178e-6, rel=1e-6)
    plain = json.loads(invoke("compare", str(LLAMA_405B), "--hw", H100, "--hw", B200, "--batch",
                              "1", "--mode", "inference", "--phase", "decode", "--seq", "64",
                              "--tp", "8", "--format", "json").stdout)
    assert plain["pp"] == 1 and "pipeline_parallel" not in plain["devices"][0]


def test_a_sweep_marks_the_batches_the_most_loaded_stage_cannot_hold():
    """Stage 1 holds 63 blocks and the head: 50,735,316,992 B of weights on each GPU
    (tests/test_serving_pp.py), 1 GB of workspace, and each batch's KV cache for its 63
    blocks' one KV head, for the 2 batches in flight: 63 x 2 (K, V) x 128 x 4096 x 2 B x 2 =
    264,241,152 B a batch. Against the 85,017,493,504 B CUDA reports of an H100: at batch 125
    51,735,316,992 + 33,030,144,000 = 84,765,460,992 B leaves 252 MB for the activations; at
    126 the KV cache alone passes it: 51,735,316,992 + 33,294,385,152 = 85,029,702,144 B."""
    s = sweep(LLAMA_405B, H100, [32, 125, 126, 256], tp=8, pp=2, **DECODE)
    assert (s.tp, s.pp, s.max_batch) == (8, 2, 125)
    assert 50_735_316_992 + 10**9 + 126 * KV_PER_BATCH == 85_029_702_144 > 85_017_493_504
    fits = {}
    for report in s.reports:
        batch = report.batch
        alone = analyze_model(LLAMA_405B, H100, batch=batch, tp=8, pp=2, **DECODE)
        assert report.totals == alone.totals and report.memory == alone.memory
        assert report.memory.parts["kv_cache"] == batch * KV_PER_BATCH
        assert report.pipeline_parallel.stages.heaviest == 1
        fits[batch] = report.memory.fits
    assert fits == {32: True, 125: True, 126: False, 256: False}
    assert s.reports[1].memory.parts["activations"] < 252_000_000
    data = s.to_dict()
    assert (data["tp"], data["pp"], data["max_batch"]) == (8, 2, 125)
    for point, report in zip(data["points"], s.reports):
        step = report.pipeline_parallel.step
        cycle = max(step.latency(), 2 * max(step.stage_s))
        # a decode step makes a token a sequence; 2 batches in flight, one every cycle
        assert point["tokens_per_s"] == pytest.approx(2 * point["batch"] / cycle, rel=1e-12)
        assert point["tokens_per_s"] > point["batch"] / point["time_s"]
        assert point["pp_comm_time_s"] == pytest.approx(_handoff(point["batch"], 450),
                                                        rel=1e-9)
        assert point["pipeline_parallel"]["pp"] == 2
    assert "(one GPU of tp 8 x pp 2)" in repr(s)


def test_every_compare_format_says_one_gpu_of_tp_x_pp(invoke, small):
    from roofline.output.whatif import comparison_csv, comparison_html, comparison_markdown
    from roofline.plot import plot_comparison, plot_generation_comparison

    args = ("compare", str(small), "--hw", H100, "--hw", A100, "--tp", "2", "--pp", "2")
    text = " ".join(invoke(*args).stdout.split())
    assert ("pipeline-parallel over 2 stages of tp 2 (4 GPUs, 1 node of 8): every figure "
            "below is one GPU's of tp x pp, its memory and fits the most loaded stage's with "
            "the KV cache of the 2 batches in flight") in text
    assert "stage 0 embed .. blk.3 (3 blocks), stage 1 blk.4 .. lm_head (2 blocks)" in text
    # tp 2 x pp 2 fits one node: the hand-off on each device's own NVSwitch
    assert ("hand-offs on each device's own: h100-sxm5-80gb inside a node on NVSwitch (DGX "
            "H100 / HGX H100, 8 GPUs)") in text
    assert "tokens/s are the 4 GPUs' with 2 batches in flight" in text
    assert "pipeline on a100-sxm4-80gb, in its step time: stages" in text
    assert "throughput (tokens/s) is the 2 GPUs' together" not in text  # the pipeline's
    c = compare(small, [H100, A100], tp=2, pp=2)
    assert "pipeline-parallel over 2 stages" in comparison_markdown(c)
    rows = list(csv.reader(io.StringIO(comparison_csv(c))))
    assert rows[0][-2:] == ["tp", "pp"] and {tuple(row[-2:]) for row in rows[1:]} == {("2", "2")}
    html = comparison_html(c)
    assert "llama-5: h100-sxm5-80gb vs a100-sxm4-80gb (one GPU of tp 2 x pp 2 each)" in html
    assert "pipeline parallelism" in html and "pipeline on h100-sxm5-80gb" in html
    assert "one GPU of tp 2 x pp 2 each (one batch through every stage" in (
        plot_comparison(c).get_title())
    g = compare(small, [H100, A100], batch=2, prompt=16, generate=4, pp=2)
    assert g.tp == 1 and g.pp == 2
    assert "over 2 GPUs each, tp 1 x pp 2 (tokens/s the pipeline's, 2 batches in flight)" in (
        plot_generation_comparison(g).get_title())
    generation = " ".join(invoke("compare", str(small), "--hw", H100, "--hw", A100, "--batch",
                                 "2", "--prompt", "16", "--generate", "4", "--pp",
                                 "2").stdout.split())
    assert ("tokens/s = 2 x batch x 4 / the steady time of each of the 2 batches in flight "
            "(each phase max(its latency, 2 x its slowest stage)), on the 2 GPUs") in generation
    assert "pipeline on h100-sxm5-80gb, in its generation's times: prefill stages" in generation


def test_every_sweep_format_says_one_gpu_of_tp_x_pp(invoke, small):
    from roofline.output.whatif_sweep import sweep_csv, sweep_html, sweep_markdown

    args = ("sweep", str(small), "--hw", H100, "--batch", "1,8", "--pp", "2")
    text = invoke(*args).stdout
    flat = " ".join(text.split())
    assert "pipeline-parallel over 2 stages of tp 1 (2 GPUs, 1 node of 8)" in flat
    assert "pp comm: the hand-offs between the pipeline's stages" in flat
    header = next(line for line in text.splitlines() if line.startswith("batch"))
    assert "pp comm" in header and "tp comm" not in header
    s = sweep(small, H100, [1, 8], pp=2)
    assert "| pp comm |" in sweep_markdown(s)
    rows = list(csv.reader(io.StringIO(sweep_csv(s))))
    assert rows[0][-1] == "pp" and {row[-1] for row in rows[1:]} == {"2"}
    # its samples_per_s the pipeline's, as the JSON's
    points = {p["batch"]: p for p in s.to_dict()["points"]}
    at = rows[0].index("samples_per_s")
    assert {float(row[at]) for row in rows[1:] if row[0] == "8"} == {
        points[8]["samples_per_s"]}
    html = sweep_html(s)
    assert "llama-5 on h100-sxm5-80gb (one GPU of tp 1 x pp 2): batch sweep" in html
    assert "pipeline parallelism" in html and "pp comm" in html
    assert "(one GPU of tp 1 x pp 2)" in s.plot().get_title()
    g = sweep(small, H100, [1, 2], prompt=16, generate=4, pp=2)
    ax = g.plot()
    assert ax.get_ylabel() == "output tokens/s on the 2 GPUs"
    generation = " ".join(invoke("sweep", str(small), "--hw", H100, "--batch", "1,2",
                                 "--prompt", "16", "--generate", "4", "--pp",
                                 "2").stdout.split())
    assert "pp comm: the hand-offs between the pipeline's stages" in generation
    assert "of the whole generation" in generation


def test_a_compared_and_a_swept_generation_are_analyzes_on_each_device(small):
    c = compare(small, [H100, A100], batch=2, prompt=16, generate=4, tp=2, pp=2)
    for report in c.reports:
        alone = analyze_model(small, report.hardware.name, batch=2, prompt=16, generate=4,
                              tp=2, pp=2)
        assert report.generation == alone.generation
        assert report.pipeline_parallel.to_dict() == alone.pipeline_parallel.to_dict()
    # the speedup is the tokens/s' ratio: 2 batches in flight, each its steady time
    base, other = (r.generation for r in c.reports)
    assert c.generation_speedup(c.reports[1]) == pytest.approx(
        other.tokens_per_s / base.tokens_per_s, rel=1e-12)
    assert base.tokens_per_s == pytest.approx(2 * 2 * 4 / base.steady_s, rel=1e-12)
    s = sweep(small, H100, [1, 4], prompt=16, generate=4, pp=2)
    for report in s.reports:
        alone = analyze_model(small, H100, batch=report.batch, prompt=16, generate=4, pp=2)
        assert report.generation == alone.generation
        assert s.to_dict()["points"][s.reports.index(report)]["predicted_pp_comm_time_s"] == (
            alone.totals["predicted_pp_comm_time_s"])


@pytest.mark.parametrize("args, expected", [
    (("compare", "{m}", "--hw", H100, "--hw", A100, "--inter", "ib-hdr"),
     "Error: --inter: goes with --pp N (the link between nodes a pipeline's stages hand off "
     "over)"),
    (("sweep", "{m}", "--hw", H100, "--batch", "1,2", "--mode", "train", "--pp", "2"),
     "Error: {m}: --pp serves an inference step or a generation; a training step's pipeline "
     "is `roofline plan`'s"),
    (("sweep", "{m}", "--hw", H100, "--batch", "1,2", "--pp", "6"),
     "Error: {m}: pipeline parallelism 6 is more stages than the model's 5 transformer blocks: "
     "each stage runs one at least (--pp)"),
    (("compare", "{m}", "--hw", H100, "--hw", "xeon-platinum-8480plus", "--pp", "2"),
     "Error: xeon-platinum-8480plus: no intra-node link known for this entry: give one "
     "(--intra NAME or GB/s)"),
    (("sweep", "examples.torch_mlp:make", "--hw", "v100", "--batch", "64,128", "--mode",
      "inference", "--pp", "2"),
     "Error: examples.torch_mlp:make: --pp splits a model's transformer blocks over GPUs, and "
     "a captured module holds the ops it ran, not its layers (sweep a model.yaml or "
     "config.json)"),
])
def test_refusals_are_one_line(invoke, small, args, expected):
    result = invoke(*(a.format(m=small) for a in args))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [expected.format(m=small)]
