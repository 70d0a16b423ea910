"""compare and sweep served over several GPUs (``--tp N``, 0.9.0): each device or point is one
GPU's shard plus the group's exposed communication on that device's own intra-node link, as
``analyze --tp N`` gives it. The communication is worked by hand from Llama-2-7B's config
(hidden 4096, 32 blocks, vocabulary 32000, fp16: 2 B) and links.yaml's figures: an H100 SXM
node's NVSwitch 450 GB/s a direction, an A100 SXM node's 300 GB/s, both NCCL's 3.4 us a step;
an L40S (a PCIe card) on PCIe Gen4 x16, 31.5 GB/s and 5.7 us a step. A decode step at batch B
sends 65 all-reduces (2 a block x 32, the embedding's) of B x 4096 x 2 B and gathers B x 32000
x 2 B of logits to one rank."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline.analysis.parallel_shard import shard_network  # noqa: E402
from roofline.analysis.report import analyze  # noqa: E402
from roofline.analysis.whatif import compare, sweep  # noqa: E402
from roofline.api import analyze_model  # noqa: E402
from roofline.hardware.catalog import load_hardware  # noqa: E402
from roofline.model.network import load_network  # noqa: E402
from roofline.units import seconds  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "examples" / "hf" / "llama-2-7b.json"
H100, A100, L40S = "h100-sxm5-80gb", "a100-sxm4-80gb", "l40s"
DECODE = {"mode": "inference", "phase": "decode", "seq": 1024}


def _shard_totals(hardware, batch, tp):
    """The shard alone on ``hardware`` (no communication): what the device's figures add the
    group's communication to."""
    network = load_network(LLAMA).with_overrides(batch=batch, **DECODE)
    return analyze(shard_network(network, tp, serving=True), load_hardware(hardware)).totals


def _one_shot(nbytes, p, gbs, a_us=3.4):
    """vLLM's one-shot all-reduce: 2 syncs of a step's latency + (p - 1) S / B."""
    return 2 * a_us * 1e-6 + (p - 1) * nbytes / (gbs * 1e9)


def test_compare_at_tp_2_adds_each_devices_own_all_reduces_to_its_shard():
    # batch 4: 65 all-reduces of 4 x 4096 x 2 = 32,768 B, one-shot at 2 GPUs:
    #   H100: 6.8 us + 32768 / 450e9 = 6.872818 us, x 65 = 446.733 us;
    #   A100: 6.8 us + 32768 / 300e9 = 6.909227 us, x 65 = 449.100 us;
    # the gather of 4 x 32000 x 2 = 256,000 B: (p - 1) / p x S / B + a:
    #   H100: 128000 / 450e9 + 3.4 us = 3.684444 us; A100: 128000 / 300e9 + 3.4 = 3.826667 us;
    # at the roof the all-reduce is 2 (p - 1) / p x S / B = S / B and the gather without a:
    #   H100: 65 x 32768 / 450e9 + 128000 / 450e9 = 4.733156 + 0.284444 = 5.017600 us
    c = compare(LLAMA, [H100, A100], batch=4, tp=2, **DECODE)
    assert c.tp == 2
    predicted = {H100: 65 * 6.872818e-6 + 3.684444e-6, A100: 65 * 6.909227e-6 + 3.826667e-6}
    roof = {H100: 5.0176e-6, A100: (65 * 32768 + 128000) / 300e9}
    assert predicted[H100] == pytest.approx(450.417e-6, rel=1e-5)
    for report in c.reports:
        name = report.hardware.name
        shard = _shard_totals(name, 4, 2)
        t = report.totals
        assert t["predicted_time_s"] == pytest.approx(shard["predicted_time_s"]
                                                      + predicted[name], rel=1e-6)
        assert t["time_s"] == pytest.approx(shard["time_s"] + roof[name], rel=1e-9)
        assert report.tensor_parallel.step.transfers[0].algorithm == "one-shot"
    assert _one_shot(32768, 2, 450) == pytest.approx(6.872818e-6)


def test_each_device_runs_on_its_own_link_unless_intra_names_one():
    """An L40S is a PCIe card: 4 of them all-reduce over PCIe Gen4, where vLLM turns its kernel
    off past 2 GPUs, so NCCL's ring: 2 (p - 1) a + 2 (p - 1) / p x S / B = 6 x 5.7 us + 1.5 x
    32768 / 31.5e9 = 35.760381 us each; the gather 0.75 x 256000 / 31.5e9 + 5.7 us =
    11.795238 us; the H100 beside it on its NVSwitch, one-shot at 4 GPUs under 512 KiB:
    6.8 us + 3 x 32768 / 450e9 = 7.018453 us, its gather 0.75 x 256000 / 450e9 + 3.4 us =
    3.826667 us. With --intra nvswitch-h100 both run on it."""
    c = compare(LLAMA, [H100, L40S], batch=4, tp=4, **DECODE)
    h100, l40s = (r.tensor_parallel for r in c.reports)
    assert (h100.link.name, l40s.link.name) == ("nvswitch-h100", "pcie4-x16")
    assert [t.algorithm for t in l40s.step.transfers] == ["ring", "gather"]
    assert l40s.step.predicted_s == pytest.approx(65 * 35.760381e-6 + 11.795238e-6, rel=1e-6)
    assert h100.step.predicted_s == pytest.approx(65 * 7.018453e-6 + 3.826667e-6, rel=1e-6)
    given = compare(LLAMA, [H100, L40S], batch=4, tp=4, intra="nvswitch-h100", **DECODE)
    links = {r.tensor_parallel.link.name for r in given.reports}
    assert links == {"nvswitch-h100"}
    assert given.reports[1].tensor_parallel.step.predicted_s == pytest.approx(
        h100.step.predicted_s)


def test_compare_json_names_tp_and_each_devices_group(invoke):
    doc = json.loads(invoke("compare", str(LLAMA), "--hw", H100, "--hw", A100, "--batch", "4",
                            "--mode", "inference", "--phase", "decode", "--seq", "1024",
                            "--tp", "2", "--format", "json").stdout)
    assert doc["tp"] == 2
    h100, a100 = doc["devices"]
    assert h100["tensor_parallel"]["link"]["name"] == "nvswitch-h100"
    assert a100["tensor_parallel"]["link"]["name"] == "nvswitch-a100"
    assert a100["predicted_tp_comm_time_s"] == pytest.approx(65 * 6.909227e-6 + 3.826667e-6,
                                                             rel=1e-6)
    assert h100["tp_comm_time_s"] == h100["tensor_parallel"]["step"]["time_s"]
    plain = json.loads(invoke("compare", str(LLAMA), "--hw", H100, "--hw", A100, "--batch",
                              "4", "--mode", "inference", "--phase", "decode", "--seq",
                              "1024", "--format", "json").stdout)
    assert plain["tp"] == 1 and "tensor_parallel" not in plain["devices"][0]


def test_every_compare_format_says_one_gpu_of_n(invoke):
    from roofline.output.whatif import comparison_csv, comparison_html, comparison_markdown
    from roofline.plot import plot_comparison, plot_generation_comparison

    args = ("compare", str(LLAMA), "--hw", H100, "--hw", A100, "--batch", "4", "--mode",
            "inference", "--phase", "decode", "--seq", "1024", "--tp", "2")
    text = " ".join(invoke(*args).stdout.split())
    assert ("tensor-parallel over 2 GPUs: every figure below is one GPU's shard (memory and "
            "fits too), its times holding the group's all-reduces, exposed, on each device's "
            "own: h100-sxm5-80gb NVSwitch (DGX H100 / HGX H100, 8 GPUs) (450 GB/s, 3.4 us a "
            "step); a100-sxm4-80gb NVSwitch (DGX A100 / HGX A100, 8 GPUs) (300 GB/s, 3.4 us a "
            "step); throughput (tokens/s) is the 2 GPUs' together") in text
    # 65 x 6.909227 + 3.826667 = 452.926 us on the A100
    assert ("tensor-parallel communication on a100-sxm4-80gb, in its step time: 65 "
            "all-reduces of 32.8 kB (one-shot), 1 gather of 256 kB") in text
    assert f"{seconds(65 * 6.909227e-6 + 3.826667e-6)} predicted" == "453 us predicted"
    assert "453 us predicted" in text
    c = compare(LLAMA, [H100, A100], batch=4, tp=2, **DECODE)
    assert "tensor-parallel over 2 GPUs" in comparison_markdown(c)
    rows = list(csv.reader(io.StringIO(comparison_csv(c))))
    assert rows[0][-1] == "tp" and {row[-1] for row in rows[1:]} == {"2"}
    assert "llama-2-7b: h100-sxm5-80gb vs a100-sxm4-80gb (one GPU of tp 2 each)" in (
        comparison_html(c))
    assert "one GPU of tp 2 each (its all-reduces included)" in plot_comparison(c).get_title()
    g = compare(LLAMA, [H100, A100], batch=2, prompt=16, generate=4, tp=2)
    assert "over 2 GPUs each (tokens/s the group's)" in plot_generation_comparison(g).get_title()
    assert "tokens/s = batch x 4 / latency, on the 2 GPUs" in " ".join(
        invoke("compare", str(LLAMA), "--hw", H100, "--hw", A100, "--batch", "2", "--prompt",
               "16", "--generate", "4", "--tp", "2").stdout.split())


def test_a_compared_generation_is_analyzes_served_generation_on_each_device():
    """Each device's generation is analyze --tp's on it: the prefill of batch 2 x 16 tokens
    all-reduces 2 x 16 x 4096 x 2 = 262,144 B, exactly 256 KiB, so vLLM's two-shot kernel at
    8 GPUs (its one-shot takes buffers below 256 KiB): 6.8 us + 1.75 x 262144 / 450e9 =
    7.819449 us each on the H100."""
    c = compare(LLAMA, [H100, A100], batch=2, prompt=16, generate=4, tp=8)
    prefill = c.reports[0].tensor_parallel.prefill.transfers[0]
    assert (prefill.nbytes, prefill.algorithm) == (262_144, "two-shot")
    assert prefill.predicted_s == pytest.approx(7.819449e-6, rel=1e-6)
    for report in c.reports:
        alone = analyze_model(LLAMA, report.hardware.name, batch=2, prompt=16, generate=4,
                              tp=8).generation
        assert report.generation.predicted_latency_s == alone.predicted_latency_s
        assert report.generation.tokens_per_s == alone.tokens_per_s


def test_sweep_at_tp_2_adds_each_batchs_all_reduces_to_its_shard():
    # batch 1: 65 x (6.8 us + 8192 / 450e9) + 32000 / 450e9 + 3.4 us = 443.1833 + 3.4711 us;
    # batch 8: 65 x (6.8 us + 65536 / 450e9) + 256000 / 450e9 + 3.4 us = 451.4664 + 3.9689 us
    s = sweep(LLAMA, H100, [1, 8], tp=2, **DECODE)
    assert s.tp == 2
    comm = {1: 65 * _one_shot(8192, 2, 450) + 32000 / 450e9 + 3.4e-6,
            8: 65 * _one_shot(65536, 2, 450) + 256000 / 450e9 + 3.4e-6}
    assert comm[1] == pytest.approx(446.6544e-6, rel=1e-6)
    assert comm[8] == pytest.approx(455.4353e-6, rel=1e-6)
    for report in s.reports:
        batch = report.batch
        shard = _shard_totals(H100, batch, 2)
        assert report.totals["predicted_time_s"] == pytest.approx(
            shard["predicted_time_s"] + comm[batch], rel=1e-6)
    data = s.to_dict()
    assert data["tp"] == 2
    point = data["points"][1]
    assert point["predicted_tp_comm_time_s"] == pytest.approx(comm[8], rel=1e-6)
    # a decode step makes a token a sequence on the group: batch / step time
    assert point["tokens_per_s"] == pytest.approx(8 / point["time_s"])
    assert point["tensor_parallel"]["tp"] == 2


def test_every_sweep_format_says_one_gpu_of_n(invoke):
    from roofline.output.whatif_sweep import sweep_csv, sweep_html, sweep_markdown

    args = ("sweep", str(LLAMA), "--hw", H100, "--batch", "1,8", "--mode", "inference",
            "--phase", "decode", "--seq", "1024", "--tp", "2")
    text = invoke(*args).stdout
    flat = " ".join(text.split())
    assert ("tensor-parallel over 2 GPUs: every figure below is one GPU's shard (memory and "
            "fits too), its times holding the group's all-reduces, exposed, on NVSwitch (DGX "
            "H100 / HGX H100, 8 GPUs) (450 GB/s, 3.4 us a step); throughput (tokens/s) is the "
            "2 GPUs' together; tp comm:") in flat
    header = next(line for line in text.splitlines() if line.startswith("batch"))
    assert "tp comm" in header
    rows = {line.split()[0]: line for line in text.splitlines() if line[:5].strip() in ("1", "8")}
    assert "447 us" in rows["1"] and "455 us" in rows["8"]  # the hand sums above
    s = sweep(LLAMA, H100, [1, 8], tp=2, **DECODE)
    assert "| tp comm |" in sweep_markdown(s)
    csv_rows = list(csv.reader(io.StringIO(sweep_csv(s))))
    assert csv_rows[0][-1] == "tp" and {row[-1] for row in csv_rows[1:]} == {"2"}
    assert "llama-2-7b on h100-sxm5-80gb (one GPU of tp 2): batch sweep" in sweep_html(s)
    assert "(one GPU of tp 2)" in s.plot().get_title()
    g = sweep(LLAMA, H100, [1, 2], prompt=16, generate=4, tp=2)
    ax = g.plot()
    assert "(one GPU of tp 2)" in ax.get_title()
    assert ax.get_ylabel() == "output tokens/s on the 2 GPUs"
    generation_text = " ".join(invoke("sweep", str(LLAMA), "--hw", H100, "--batch", "1,2",
                                      "--prompt", "16", "--generate", "4", "--tp",
                                      "2").stdout.split())
    assert "tokens/s = batch x 4 / latency, on the 2 GPUs" in generation_text
    assert "of the whole generation" in generation_text


def test_a_swept_generation_is_analyzes_served_generation_at_each_batch():
    s = sweep(LLAMA, H100, [1, 4], prompt=16, generate=4, tp=2)
    for report in s.reports:
        alone = analyze_model(LLAMA, H100, batch=report.batch, prompt=16, generate=4, tp=2)
        assert report.generation.latency_s == alone.generation.latency_s
        assert report.tensor_parallel.predicted_generation_s == (
            alone.tensor_parallel.predicted_generation_s)
        assert report.tensor_parallel.decode_steps == 3


@pytest.mark.parametrize("args, expected", [
    (("compare", "{m}", "--hw", H100, "--hw", A100, "--batch", "1", "--prompt", "8",
      "--generate", "8", "--tp", "3"),
     "Error: {m}: tensor parallelism 3 does not divide heads (32) of block 'blk.1': each GPU "
     "must get whole heads (--tp)"),
    (("compare", "{m}", "--hw", H100, "--hw", "xeon-platinum-8480plus", "--batch", "1",
      "--prompt", "8", "--generate", "8", "--tp", "2"),
     "Error: xeon-platinum-8480plus: no intra-node link known for this entry: give one "
     "(--intra NAME or GB/s)"),
    (("compare", "{m}", "--hw", H100, "--hw", A100, "--batch", "1", "--prompt", "8",
      "--generate", "8", "--intra", "nvswitch-h100"),
     "Error: --intra: goes with --tp N (the node a tensor-parallel group serves on)"),
    (("sweep", "{m}", "--hw", H100, "--batch", "1,2", "--mode", "train", "--seq", "128",
      "--tp", "2"),
     "Error: {m}: --tp serves an inference step or a generation; a training step's split over "
     "GPUs is `roofline plan`'s"),
    (("sweep", "{m}", "--hw", H100, "--batch", "1,2", "--prompt", "8", "--generate", "8",
      "--tp", "16"),
     "Error: {m}: tensor parallelism 16 spans more than one node of 8 GPUs (--gpus-per-node): "
     "serving across nodes is not modelled by tensor parallelism (by pipeline stages it is: "
     "--pp N)"),
    (("sweep", "{m}", "--hw", H100, "--batch", "1,2", "--prompt", "8", "--generate", "8",
      "--gpus-per-node", "4"),
     "Error: --gpus-per-node: goes with --tp N (the node a tensor-parallel group serves on)"),
    (("sweep", "examples.torch_mlp:make", "--hw", "v100", "--batch", "64,128", "--mode",
      "inference", "--tp", "2"),
     "Error: examples.torch_mlp:make: --tp splits a model's transformer blocks over GPUs, and "
     "a captured module holds the ops it ran, not its layers (sweep a model.yaml or "
     "config.json)"),
])
def test_refusals_are_one_line(invoke, args, expected):
    result = invoke(*(a.format(m=LLAMA) for a in args))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [expected.format(m=LLAMA)]
