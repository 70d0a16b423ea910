"""A model.yaml's fp32 convolutions on a GPU with TF32: priced at the fp32 peak as written, with
a warning that PyTorch runs them in TF32 by default (``output.times.tf32_warning``).

A stranger asking whether ResNet-50's training step is memory-bound on an A100 read 18% of the
time memory-bound, compute-bound from batch 1, from examples/resnet50.yaml (fp32, at 19.5
TFLOP/s), while the same network captured from PyTorch, its convolutions in TF32 under torch's
default ``cudnn.allow_tf32``, read 74%, and nothing said why the two routes disagreed."""

from __future__ import annotations

from pathlib import Path

from roofline import analyze_model, compare, sweep
from roofline.output.whatif_header import compare_warnings, sweep_warnings

ROOT = Path(__file__).resolve().parents[1]
RESNET = ROOT / "examples" / "resnet50.yaml"
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"


def _tf32(warnings) -> list[str]:
    return [w for w in warnings if "cudnn.allow_tf32" in w]


def test_resnet50_in_fp32_on_an_a100_says_torch_would_run_its_convolutions_in_tf32():
    # ResNet-50's convolutions: the 7 x 7 stem, 3 in each of 3 + 4 + 6 + 3 = 16 bottleneck
    # blocks (48) and the first block of each of the 4 stages' projection shortcut: 1 + 48 + 4
    # = 53. The A100's datasheet: fp32 19.5 TFLOP/s, TF32 156 (dense).
    report = analyze_model(RESNET, "a100-sxm4-80gb")
    (text,) = _tf32(report.warnings)
    assert text.startswith("53 convolutions priced in fp32 at the 19.5 TFLOP/s fp32 peak")
    assert "at the 156 TFLOP/s TF32 peak" in text and "--dtype tf32" in text
    assert _tf32(report.to_dict()["warnings"]) == [text]


def test_no_warning_where_the_convolutions_are_already_priced_as_torch_runs_them():
    assert not _tf32(analyze_model(RESNET, "a100-sxm4-80gb", dtype="tf32").warnings)
    assert not _tf32(analyze_model(RESNET, "a100-sxm4-80gb", dtype="fp16").warnings)
    assert not _tf32(analyze_model(RESNET, "v100-sxm2-16gb").warnings)  # Volta: no TF32
    assert not _tf32(analyze_model(RESNET, "xeon-platinum-8180").warnings)  # a CPU
    # fp32 linear layers: torch's matmuls run in TF32 only when the user allows it
    assert not _tf32(analyze_model(MLP, "a100-sxm4-80gb", dtype="fp32").warnings)


def test_compare_names_each_gpu_it_concerns_and_sweep_warns_once():
    result = compare(RESNET, ["v100-sxm2-16gb", "a100-sxm4-80gb", "h100-sxm5-80gb"])
    texts = _tf32(compare_warnings(result))  # the JSON's, text's and page's warnings
    # the H100 SXM5: fp32 67, TF32 494.5 TFLOP/s (dense)
    assert [t.split(":")[0] for t in texts] == ["a100-sxm4-80gb", "h100-sxm5-80gb"]
    assert "the 67 TFLOP/s fp32 peak" in texts[1] and "the 494.5 TFLOP/s TF32 peak" in texts[1]
    swept = sweep(RESNET, "a100-sxm4-80gb", "32,64")
    assert len(_tf32(sweep_warnings(swept))) == 1
