"""--stream-input (the host-link roof) and --data-parallel (ring all-reduce), by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analysis.scaling import (
    DataParallel,
    HostLinkStream,
    network_roof_workers,
    scale,
)
from roofline.api import analyze_model
from roofline.cli import cli
from roofline.errors import InputError
from roofline.hardware.links import links, resolve_link

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_ring_allreduce_by_hand():
    # 8 workers, 100 MB of gradients, 10 GbE (1.25 GB/s), a step of 0.2 s of which the
    # backward pass is 0.15: 2 (8 - 1) / 8 x 100e6 / 1.25e9 = 1.75 x 0.08 s = 0.14 s
    d = DataParallel(8, 100_000_000, "10 GbE", 1.25, compute_s=0.2, backward_s=0.15)
    assert d.allreduce_s == pytest.approx(0.14)
    assert d.step_s == pytest.approx(0.34)           # no overlap: 0.2 + 0.14
    assert d.step_overlap_s == pytest.approx(0.2)    # 0.14 hides in the 0.15 s backward
    assert d.to_dict()["scaling_efficiency"] == pytest.approx(0.2 / 0.34)
    assert DataParallel(1, 100_000_000, "x", 1.25, 0.2).allreduce_s == 0
    # a backward pass shorter than the all-reduce leaves the rest exposed: forward and
    # update 0.1, then max(0.1, 0.14)
    short = DataParallel(8, 100_000_000, "10 GbE", 1.25, compute_s=0.2, backward_s=0.1)
    assert short.step_overlap_s == pytest.approx(0.1 + 0.14)
    # each of the ring's 2 (P - 1) steps pays the link's latency (links.yaml; 14 us on 10 GbE):
    # 14 steps x 14 us = 0.196 ms more, as plan's collectives count it
    late = DataParallel(8, 100_000_000, "10 GbE", 1.25, 0.2, 0.15, latency_us=14.0)
    assert late.allreduce_s == pytest.approx(0.14 + 14 * 14e-6)
    # network roof: T1 = 0.08 s; 2 (P-1)/P x 0.08 > 0.15 <=> P > 0.16 / 0.01 = 16 -> 17
    assert network_roof_workers(100_000_000, 1.25, 0.15) == 17
    # 2 T1 = 0.16 <= 0.2 and no latency: never
    assert network_roof_workers(100_000_000, 1.25, 0.2) is None
    # with 14 us a step the ring's time grows without bound: 0.16 (P-1)/P + 28e-6 (P-1) > 0.2
    # first at P = 1434 (0.199984 s at 1433, 0.200012 s at 1434)
    assert network_roof_workers(100_000_000, 1.25, 0.2, latency_us=14.0) == 1434


def test_resnet50_on_10gbe_xeons_scales_with_overlap():
    report = scale(analyze_model(EXAMPLES / "resnet50.yaml", "xeon-platinum-8180"),
                   workers="1,2,4,8,16,32", interconnect="10gbe")
    data = report.to_dict()
    # gradients: 25,557,032 fp32 parameters (torchvision's resnet50, batch norm included) x 4 B
    assert data["data_parallel"]["gradient_bytes"] == 25_557_032 * 4
    assert data["data_parallel"]["workers"] == 32
    assert [d["workers"] for d in data["data_parallel_sweep"]] == [1, 2, 4, 8, 16, 32]
    # near-linear to 32 workers once the all-reduce overlaps the backward pass (its 158 ms
    # inside the backward pass's); a flat ring's latency (14 us a step on 10 GbE) outlasts
    # that backward pass only past a thousand workers
    assert data["data_parallel"]["scaling_efficiency_overlap"] == 1.0
    assert data["data_parallel"]["network_roof_workers"] > 1000


def test_snapml_example_is_pcie_bound_and_nvlink_fast_enough():
    pcie, nvlink = (scale(analyze_model(EXAMPLES / "snapml-criteo.yaml", "v100-sxm2-32gb"),
                          host_link=name).to_dict()["host_link"]
                    for name in ("pcie3-x16-snapml", "nvlink2-cpu-snapml"))
    # 12,000,000 rows x 39 nonzeros x (4 + 4) B = 3.744 GB per chunk
    assert pcie["bytes"] == nvlink["bytes"] == 3_744_000_000
    # Snap ML: 318 ms over PCIe Gen3 (11.8 GB/s), 55 ms over NVLink 2.0 (68.1 GB/s)
    assert pcie["time_s"] == pytest.approx(0.318, rel=0.01)
    assert nvlink["time_s"] == pytest.approx(0.055, rel=0.01)
    assert pcie["bound"] == "host-link"
    # against Snap ML's 90 ms of GPU compute per chunk, NVLink hides and PCIe does not
    assert HostLinkStream("nvlink", 68.1, nvlink["bytes"], nvlink["time_s"], 0.090).bound == "device"
    assert HostLinkStream("pcie", 11.8, pcie["bytes"], pcie["time_s"], 0.090).bound == "host-link"


def test_entry_host_link_is_the_default_and_json_only_when_asked():
    plain = analyze_model(EXAMPLES / "slide-amazon-670k.yaml", "v100-sxm2-32gb")
    assert "host_link" not in plain.to_dict() and "data_parallel" not in plain.to_dict()
    stream = scale(plain, stream_input=True).to_dict()["host_link"]
    # 256 samples x 75 nonzeros x (4 + 4) B = 153,600 B over PCIe Gen3 x16 (15.75 GB/s)
    assert stream["bytes"] == 153_600
    assert stream["time_s"] == pytest.approx(153_600 / 15.75e9)
    assert (stream["link"], stream["bound"]) == ("PCIe 3", "device")


def test_every_named_link_has_a_source_and_a_bandwidth():
    table = links()
    for name in ("10gbe", "25gbe", "100gbe", "ib-edr", "ib-hdr", "ib-ndr", "nvlink2", "nvlink3",
                 "nvlink4", "pcie3-x16", "nvlink2-cpu"):
        assert table[name].bandwidth_gbs > 0
    assert resolve_link("12.5", "--interconnect").bandwidth_gbs == 12.5


@pytest.mark.parametrize("args, message", [
    (["--data-parallel", "0", "--interconnect", "10gbe"], "Error: --data-parallel: expected worker counts >= 1"),
    (["--data-parallel", "4", "--interconnect", "11gbe"], "Error: --interconnect: unknown link '11gbe' (known: pcie3-x16"),
    (["--data-parallel", "4"], "Error: --data-parallel: no interconnect to all-reduce over: give --interconnect ib-ndr too"),
    (["--interconnect", "10gbe"], "Error: --interconnect: no worker counts to all-reduce among: give --data-parallel 8"),
    (["--host-link", "-3"], "Error: --host-link: expected a positive bandwidth in GB/s"),
])
def test_bad_scaling_options_are_one_line_errors(runner, args, message):
    result = runner.invoke(cli, ["analyze", str(EXAMPLES / "resnet50.yaml"), "--hw", "8180",
                                 *args])
    assert result.exit_code == 2
    assert message in result.output
    assert result.output.count("\n") == 1


def test_cli_table_and_json(runner):
    result = runner.invoke(cli, ["analyze", str(EXAMPLES / "resnet50.yaml"), "--hw", "8180",
                                 "--data-parallel", "1,8,32", "--interconnect", "10gbe",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data["data_parallel"]) >= {"workers", "gradient_bytes", "interconnect_gbs",
                                          "allreduce_s", "step_s", "scaling_efficiency"}
    result = runner.invoke(cli, ["analyze", str(EXAMPLES / "snapml-criteo.yaml"), "--hw",
                                 "v100-sxm2-32gb", "--stream-input"])
    assert "host-link-bound" in result.output


@pytest.mark.parametrize("args, over", [
    # 12,000,000 rows x 39 nonzeros x 8 B = 3.74 GB; a bare bandwidth is its own label: the
    # figure said once, not "12.5 GB/s (12.5 GB/s)"
    (["--host-link", "12.5"], "streamed input: 3.74 GB per step over 12.5 GB/s: "),
    # a named link keeps its figure in parentheses
    (["--host-link", "nvlink2-cpu-snapml"], "streamed input: 3.74 GB per step over NVLink 2.0 "
                                            "to a POWER9 CPU (Snap ML, measured) (68.1 GB/s): "),
])
def test_a_host_link_names_its_bandwidth_once(runner, args, over):
    result = runner.invoke(cli, ["analyze", str(EXAMPLES / "snapml-criteo.yaml"), "--hw",
                                 "v100-sxm2-32gb", *args])
    assert result.exit_code == 0, result.output
    assert over in " ".join(result.output.split())


@pytest.mark.parametrize("link, over", [
    ("10", "per step over 10 GB/s, "),
    # 10 Gb/s / 8 = 1.25 GB/s; links.yaml's 14 us a step
    ("10gbe", "per step over 10 Gb Ethernet (1.25 GB/s, 14 us a ring step), "),
])
def test_an_interconnect_names_its_bandwidth_once(runner, link, over):
    result = runner.invoke(cli, ["analyze", str(EXAMPLES / "resnet50.yaml"), "--hw", "8180",
                                 "--data-parallel", "1,8", "--interconnect", link])
    assert result.exit_code == 0, result.output
    assert over in " ".join(result.output.split())


def test_plan_names_a_bare_bandwidth_once(runner):
    result = runner.invoke(cli, ["plan", str(EXAMPLES / "mlp-1024-4096-1000.yaml"), "--hw",
                                 "h100", "--gpus", "1", "--intra", "400", "--inter", "50"])
    assert result.exit_code == 0, result.output
    assert ("links: inside a node (8 GPUs) 400 GB/s per direction (no latency stated); between nodes "
            "50 GB/s per direction per GPU (no latency stated)") in " ".join(result.output.split())


def test_inference_has_no_gradients_to_all_reduce(runner):
    """An inference step makes no gradients, so its replicas share nothing: P of them serve P
    times one's throughput. The all-reduce table (13.5 GB of "gradients" for Llama-2 7B, a 0 s
    backward pass, 7% efficiency) is refused in one line that says so, CLI and library alike."""
    result = runner.invoke(cli, ["analyze", str(EXAMPLES / "hf" / "llama-2-7b.json"), "--hw",
                                 "h100", "--batch", "1", "--seq", "2048", "--mode", "inference",
                                 "--data-parallel", "1,8", "--interconnect", "ib-ndr"])
    assert result.exit_code == 2
    assert result.output == (
        "Error: --data-parallel: an inference step has no gradients to all-reduce: its "
        "replicas run apart, so 8 of them serve 8x one's throughput (100% scaling); this "
        "models training's gradient all-reduce (--mode train)\n")
    report = analyze_model(str(EXAMPLES / "mlp-1024-4096-1000.yaml"), "h100",
                           mode="inference")
    with pytest.raises(InputError, match=r"^workers: an inference step has no gradients.*"
                                        r"\(mode='train'\)$"):
        scale(report, workers=(8,), interconnect="ib-ndr")
    # said first, before asking for an interconnect it would not use
    without = runner.invoke(cli, ["analyze", str(EXAMPLES / "mlp-1024-4096-1000.yaml"), "--hw",
                                  "h100", "--mode", "inference", "--data-parallel", "8"])
    assert without.exit_code == 2
    assert "an inference step has no gradients to all-reduce" in without.output
    # the same model trained still all-reduces
    trained = scale(analyze_model(str(EXAMPLES / "mlp-1024-4096-1000.yaml"), "h100",
                                  mode="train"), workers=(8,), interconnect="ib-ndr")
    assert trained.scaling is not None and trained.scaling.data_parallel[0].workers == 8


def test_a_language_model_streams_its_token_ids(runner):
    # Llama-2-7B's first layer is its token embedding: a step reads batch x seq token ids,
    # int64 as torch's embedding takes them: 8 x 512 x 8 B = 32,768 B (it printed "0 B").
    # Over the A100's PCIe 4 (31.5 GB/s): 32,768 / 31.5e9 = 1.04 us
    llama = EXAMPLES / "hf" / "llama-2-7b.json"
    stream = scale(analyze_model(llama, "a100", batch=8, seq=512),
                   stream_input=True).to_dict()["host_link"]
    assert stream["bytes"] == 32_768
    assert stream["time_s"] == pytest.approx(32_768 / 31.5e9)
    assert stream["bound"] == "device"
    result = runner.invoke(cli, ["analyze", str(llama), "--hw", "a100", "--batch", "8", "--seq",
                                 "512", "--stream-input"])
    assert result.exit_code == 0, result.output
    assert "streamed input: 32.8 kB per step over PCIe 4 (31.5 GB/s): 1.04 us against" in (
        " ".join(result.output.split()))
    # a decode step reads one new token per sequence: 8 x 8 B = 64 B
    decode = scale(analyze_model(llama, "a100", batch=8, seq=512, mode="inference",
                                 phase="decode"), stream_input=True)
    assert decode.to_dict()["host_link"]["bytes"] == 64
    # BERT's tokenizer hands in token-type ids beside the token ids (its embedding has a
    # token-type table; position ids are made on the device): 2 x 128 x 2 x 8 B = 4,096 B
    bert = scale(analyze_model(EXAMPLES / "hf" / "bert-base-uncased.json", "a100", batch=2,
                               seq=128, dtype="fp16"), stream_input=True)
    assert bert.to_dict()["host_link"]["bytes"] == 4_096


def test_a_model_yaml_embedding_streams_its_token_ids(tmp_path):
    # the same for a model.yaml that starts with an embedding: 4 x 16 x 8 B = 512 B
    model = tmp_path / "lm.yaml"
    model.write_text("batch: 4\nseq: 16\ndtype: fp16\nmode: inference\nlayers:\n"
                     "  - {type: embedding, vocab: 1000, dim: 64}\n"
                     "  - {type: linear, in: 64, out: 1000}\n")
    stream = scale(analyze_model(model, "a100"), stream_input=True).to_dict()["host_link"]
    assert stream["bytes"] == 512


def test_an_input_no_layer_describes_is_refused_not_zero():
    # a captured module records the ops it ran, not its inputs' bytes: --stream-input says so
    # in one line rather than stream "0 B" (built here by hand: no torch needed)
    from roofline.errors import RooflineError, keyword
    from roofline.model.layers.captured import Captured, CapturedOp
    from roofline.model.network import Network

    layer = Captured("fc", 4, (CapturedOp("fc", "forward", "relu", 1024, 2048, 0),), (), 0,
                     "<torch Tiny>")
    net = Network("Tiny", 4, "fp32", "inference", (layer,), source="<torch Tiny>")
    with pytest.raises(RooflineError) as caught:
        scale(analyze_model(net, "a100"), stream_input=True)
    assert caught.value.text(keyword) == (
        "stream_input=...: the first layer, 'fc', does not say what a step reads as its input "
        "(a module captured from torch records the ops it ran, not its inputs' bytes): no "
        "streamed input to time")
