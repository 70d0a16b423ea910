"""``roofline sweep package.module:factory``: a factory with a ``batch`` parameter captured at
each batch, its points those analyze gives of the same factory, and the batch at which each GEMM
turns compute-bound read from what the captures show. Needs torch (the `torch` extra)."""

from __future__ import annotations

import json

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

import roofline  # noqa: E402
from roofline.analysis.captured_scaling import scaled_gemm  # noqa: E402
from roofline.errors import CaptureError, InputError  # noqa: E402
from roofline.torch import capture  # noqa: E402

FACTORY = '''
import torch
def make(batch=8):
    return (torch.nn.Sequential(torch.nn.Linear(64, 256, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(256, 32, bias=False)),
            torch.zeros(batch, 64))
def unbatched():
    return torch.nn.Linear(64, 32), torch.zeros(4, 64)
def ignores(batch=8):
    return torch.nn.Linear(64, 32), torch.zeros(4, 64)
def fails(batch=8):
    if batch == 3:
        raise ValueError("no kernel for a batch of 3")
    return torch.nn.Linear(64, 32), torch.zeros(batch, 64)
def conv(batch=2):
    return torch.nn.Conv2d(128, 128, 3, padding=1, bias=False), torch.zeros(batch, 128, 8, 8)
class Odd(torch.nn.Module):
    # three GEMMs: fc (M = batch), one over batch + 1 rows (M = batch + 1: neither the batch
    # nor fixed), one of two parameters (64 x 64 x 64 whatever the batch)
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 64, bias=False)
        self.w = torch.nn.Parameter(torch.zeros(64, 64))
    def forward(self, x):
        y = self.fc(x)
        return (torch.cat([y, y[:1]]) @ self.w).sum() + (self.w @ self.w).sum()
def odd(batch=8):
    return Odd(), torch.zeros(batch, 64)
'''

H100_BW = 3350e9  # bytes/s, hwdb/gpu/h100-sxm5-80gb.yaml
H100_FP32_RIDGE = 67e12 / H100_BW  # 20.0 FLOP/B
H100_FP16_RIDGE = 989.5e12 / H100_BW  # 295.37 FLOP/B


@pytest.fixture
def factory(tmp_path, monkeypatch):
    """``capture_sweep_example``, the module holding the factories above, importable."""
    (tmp_path / "capture_sweep_example.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "capture_sweep_example"


def _mlp_by_hand(b: int) -> tuple[list[int], list[int], int]:
    """The MLP 64 -> 256 -> ReLU -> 32 (no bias) in fp32 inference at batch b, by hand:
    MM1 is M = b, N = 256, K = 64: 2 x b x 256 x 64 = 32,768 b FLOPs over 4 (64 b + 64 x 256 +
    256 b) = 4 (320 b + 16,384) B; MM2 is M = b, N = 32, K = 256: 2 x b x 32 x 256 = 16,384 b
    FLOPs over 4 (256 b + 256 x 32 + 32 b) = 4 (288 b + 8,192) B; the ReLU reads and writes
    b x 256 values, 2 x 4 x 256 b = 2,048 b B. The step's bytes: 4,480 b + 98,304."""
    flops = [2 * b * 256 * 64, 2 * b * 32 * 256]
    gemm_bytes = [4 * (64 * b + 64 * 256 + 256 * b), 4 * (256 * b + 256 * 32 + 32 * b)]
    return flops, gemm_bytes, 4480 * b + 98304


def test_a_sweep_of_a_factory_is_analyze_of_it_at_each_batch(factory):
    """Batches 1, 8, 64 on an H100: every GEMM and the ReLU are memory-bound (MM1's intensity
    at 64 is 2,097,152 / 147,456 = 14.2 < 20), so the step's roofline time is its bytes over
    3.35 TB/s: at batch 1, 102,784 B -> 30.68 ns; at 8, 134,144 B; at 64, 385,024 B. Each point
    is also analyze's of the same factory at that batch, figure for figure."""
    sweep = roofline.sweep(f"{factory}:make", "h100", batches=[1, 8, 64], mode="inference")
    data = sweep.to_dict()
    assert [p["batch"] for p in data["points"]] == [1, 8, 64]
    assert _mlp_by_hand(1)[2] == 102784 and _mlp_by_hand(64)[2] == 385024
    for point, report in zip(data["points"], sweep.reports, strict=True):
        b = point["batch"]
        flops, gemm_bytes, step_bytes = _mlp_by_hand(b)
        assert [(r.gemm.m, r.gemm.n, r.gemm.k) for r in report.results] == [(b, 256, 64),
                                                                           (b, 32, 256)]
        assert [r.gemm.flops for r in report.results] == flops
        assert [r.gemm.bytes for r in report.results] == gemm_bytes
        assert [g["intensity"] for g in point["gemms"]] == pytest.approx(
            [f / n for f, n in zip(flops, gemm_bytes, strict=True)])
        assert point["time_s"] == pytest.approx(step_bytes / H100_BW)
        assert point["samples_per_s"] == pytest.approx(b * H100_BW / step_bytes)
        assert point["memory_bound_time_fraction"] == 1.0
        alone = roofline.analyze_model(f"{factory}:make", "h100", batch=b,
                                       mode="inference").to_dict()
        assert [(g["flops"], g["bytes"], g["time_s"], g["predicted_time_s"])
                for g in alone["gemms"]] == [
            (r.gemm.flops, r.gemm.bytes, r.time_s, r.predicted_time_s) for r in report.results]
        assert alone["totals"]["time_s"] == point["time_s"]
        assert alone["totals"]["predicted_time_s"] == point["predicted_time_s"]
        assert alone["memory"]["total_bytes"] == point["memory_bytes"]


def test_the_transitions_of_a_captured_mlp_are_its_closed_form(factory):
    """MM1's M grows with the batch at 1, 8 and 64 (1, 8, 64), its N and K stay: intensity
    32,768 b / (4 (320 b + 16,384)) = 8,192 b / (320 b + 16,384) >= 20 gives 1,792 b >=
    327,680, b >= 182.9: batch 183, past the batches captured (the closed form assumes M keeps
    growing so). MM2's tends to 16,384 / (4 x 288) = 14.2 < 20: never."""
    sweep = roofline.sweep(f"{factory}:make", "h100", batches=[1, 8, 64], mode="inference")
    assert H100_FP32_RIDGE == pytest.approx(20.0)
    data = sweep.to_dict()
    assert data["transitions"] == {"MM1": 183, "MM2": None}
    assert data["transitions_basis"] == "captures" and data["transitions_unknown"] == {}
    # the same layers read from a model.yaml, whose M is the batch by construction
    yaml = roofline.network_from_yaml("mlp: [64, 256, 32]\ndtype: fp32\nmode: inference\n")
    assert roofline.sweep(yaml, "h100", batches=[1, 8]).transitions() == {"MM1": 183,
                                                                         "MM2": None}


def test_a_convolution_scales_by_its_output_positions(factory):
    """Conv2d(128, 128, 3, padding 1) on 8 x 8 maps, fp16: forward M = b x 64 positions (128
    at batch 2, 256 at 4), N = 128, K = 128 x 9 = 1,152, its bytes the tensors', 2 (b 128 x 64
    + 128 x 1,152 + b 128 x 64) = 32,768 b + 294,912; FLOPs 2 x 64 b x 128 x 1,152 =
    18,874,368 b. 18,874,368 b >= 295.37 (32,768 b + 294,912) gives b >= 87,109,082 /
    9,195,581 = 9.47: batch 10. Training adds the weight gradient, K = 64 b, the same tensors:
    10 too (a first layer has no data gradient)."""
    assert H100_FP16_RIDGE * 294912 == pytest.approx(87_109_082, rel=1e-7)
    assert 18_874_368 - H100_FP16_RIDGE * 32768 == pytest.approx(9_195_581, rel=1e-7)
    for mode, names in (("inference", ["MM1"]), ("train", ["MM1", "MM2"])):
        sweep = roofline.sweep(f"{factory}:conv", "h100", batches=[2, 4], mode=mode,
                               dtype="fp16")
        first = sweep.reports[0].results[0].gemm
        assert (first.m, first.n, first.k, first.bytes) == (128, 128, 1152, 360448)
        assert sweep.transitions() == dict.fromkeys(names, 10)


def test_two_captures_say_which_gemm_grows_with_the_batch(factory):
    """``Odd`` captured at batches 8 and 16: fc's M doubles (8 -> 16) and is read as the batch
    (batch_dims 1, 0, 0); the product over batch + 1 rows goes 9 -> 17, not in proportion,
    and is not read; the parameters' product stays 64 x 64 x 64 (batch_dims 0: no batch
    changes it)."""
    import importlib

    odd = importlib.import_module(factory).Odd
    nets = [capture(odd(), torch.zeros(b, 64), mode="inference") for b in (8, 16)]
    gemms = [net.gemms() for net in nets]
    assert [(g.m, g.n, g.k) for g in gemms[0]] == [(8, 64, 64), (9, 64, 64), (64, 64, 64)]
    assert [(g.m, g.n, g.k) for g in gemms[1]] == [(16, 64, 64), (17, 64, 64), (64, 64, 64)]
    scaled = [scaled_gemm([a, b], [8, 16]) for a, b in zip(*gemms, strict=True)]
    assert scaled[0].batch_dims == (1, 0, 0) and scaled[0].dims_at_batch(512) == (512, 64, 64)
    assert scaled[1] == ("its M (9, 17 at batches 8, 16) neither stays the same nor grows in "
                         "proportion to the batch")
    assert scaled[2].batch_dims == (0, 0, 0)
    # one capture says nothing of the batch; a GEMM another capture lacks is not read
    assert scaled_gemm([gemms[0][0], None], [8, 16]).startswith("not the same GEMM")


def test_the_sweep_says_why_a_transition_is_unknown(factory):
    """fp32 on an H100 (ridge 20): fc tends to 2 x 64 x 64 / (4 x 128) = 16 < 20, never; the
    parameters' product is 2 x 64^3 / (4 x 3 x 4,096) = 10.7 at every batch, never; the
    product over batch + 1 rows is unknown, with the reason, in JSON, the table and CSV."""
    sweep = roofline.sweep(f"{factory}:odd", "h100", batches="8,16",
                           mode="inference")
    why = "its M (9, 17 at batches 8, 16) neither stays the same nor grows in proportion to " \
          "the batch"
    assert sweep.transitions() == {"MM1": None, "MM2": None, "MM3": None}
    assert sweep.unknown_transitions == {"MM2": why}
    from roofline.output.whatif_sweep import SWEEP_FORMATS

    table = SWEEP_FORMATS["table"](sweep)
    assert "  never: MM1,MM3\n" in table
    assert f"compute-bound from: unknown\n  MM2: {why}\n" in table
    import csv

    rows = list(csv.reader(SWEEP_FORMATS["csv"](sweep).splitlines()))
    assert rows[0][-1] == "compute_bound_from_unknown"
    assert [(row[0], row[1], row[8], row[-1]) for row in rows[1:4]] == [
        ("8", "MM1", "", ""), ("8", "MM2", "", why), ("8", "MM3", "", "")]


def test_one_batch_says_nothing_of_the_others(factory):
    said: list[str] = []
    sweep = roofline.sweep(f"{factory}:make", "h100", batches=[8], mode="inference",
                           progress=said.append)
    assert said == [f"capturing {factory}:make at batch 8 (1 of 1) on the meta device, "
                    f"inference (the factory called for its module and inputs) ..."]
    reason = ("captured at one batch (8): which of its dimensions grow with the batch is not "
              "known; sweep two batches or more")
    assert sweep.to_dict()["transitions"] == {"MM1": None, "MM2": None}
    assert sweep.unknown_transitions == {"MM1": reason, "MM2": reason}


def test_the_cli_sweeps_a_factory_and_says_each_capture(invoke, factory):
    result = invoke("sweep", f"{factory}:make", "--hw", "h100", "--batch", "1,8,64", "--mode",
                    "inference", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p["time_s"] for p in data["points"]] == pytest.approx(
        [_mlp_by_hand(b)[2] / H100_BW for b in (1, 8, 64)])
    assert data["transitions"] == {"MM1": 183, "MM2": None}
    assert result.stderr == "".join(
        f"capturing {factory}:make at batch {b} ({i} of 3) on the meta device, inference (the "
        f"factory called for its module and inputs) ...\n"
        for i, b in enumerate((1, 8, 64), start=1))
    result = invoke("sweep", f"{factory}:make", "--hw", "h100", "--batch", "1,8", "--mode",
                    "inference")
    assert result.exit_code == 0, result.output
    assert ("compute-bound from (closed form over the dimension that grew in proportion to the "
            "batch across the captures at batches 1, 8; assumed to keep doing so):\n"
            "  batch >= 183: MM1\n  never: MM2\n") in result.stdout


def test_a_factory_without_a_batch_parameter_is_refused_in_one_line(invoke, factory):
    result = invoke("sweep", f"{factory}:unbatched", "--hw", "h100", "--batch", "1,8")
    assert result.exit_code == 2
    assert result.stderr == (f"Error: {factory}:unbatched: sweep captures the module at each "
                             f"batch, calling the factory with it, so it needs a batch "
                             f"parameter: def unbatched(batch=8): return module, "
                             f"example_inputs (inputs whose leading dimension is batch)\n")
    with pytest.raises(CaptureError, match="needs a batch parameter"):
        roofline.sweep(f"{factory}:unbatched", "h100", batches=[1, 8])


def test_a_capture_that_fails_names_its_batch(invoke, factory):
    """The factory raises at batch 3: the sweep stops there, one line naming the batch (no
    point is dropped); a factory that ignores its batch is caught at the first."""
    result = invoke("sweep", f"{factory}:fails", "--hw", "h100", "--batch", "1,3,8")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == (f"Error: {factory}:fails: at batch 3: the factory "
                                              f"raised ValueError: no kernel for a batch of 3")
    result = invoke("sweep", f"{factory}:ignores", "--hw", "h100", "--batch", "1,8")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: {factory}:ignores: at batch 1: the factory, called with batch=1, made inputs "
        f"of batch 4 (the first input's leading dimension): make them at the batch given")


def test_a_seq_or_a_generation_is_refused_before_any_capture(invoke, factory):
    result = invoke("sweep", f"{factory}:make", "--hw", "h100", "--batch", "1,8", "--seq",
                    "128")
    assert result.exit_code == 2 and result.stderr == (
        f"Error: --seq: {factory}:make is a captured module, whose step is its example "
        f"inputs' shapes, one sequence length: sweeping seqs needs a model.yaml or config.json "
        f"(sweep varies a factory's batch)\n")
    result = invoke("sweep", f"{factory}:make", "--hw", "h100", "--batch", "1,8", "--prompt",
                    "16", "--generate", "4")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {factory}:make: generate: a captured module's "
                                     f"step is its example inputs' shapes, one length")
    with pytest.raises(InputError, match="give the batches to sweep"):
        roofline.sweep(f"{factory}:make", "h100")
