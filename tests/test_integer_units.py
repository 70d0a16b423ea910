"""Integer dtypes' peaks and rates are written in TOPS, as `hw list` says and vendors quote them
(the same 10^12 operations a second, a multiply-add counting 2); float dtypes' in TFLOP/s. JSON
keeps its field names (`attainable_tflops`, `peak_tflops`): a contract."""

from __future__ import annotations

import json
from pathlib import Path

from roofline.units import rate_unit

MLP = Path(__file__).parent.parent / "examples" / "mlp-1024-4096-1000.yaml"
GEMM = ("gemm", "512", "512", "512", "--hw", "a100")


def test_rate_unit():
    assert [rate_unit(d) for d in ("int8", "fp8", "fp16", "tf32", "fp64")] == [
        "TOPS", "TFLOP/s", "TFLOP/s", "TFLOP/s", "TFLOP/s"]


def test_int8_text_and_markdown_say_tops(invoke):
    # A100 SXM4 80GB: int8 624 TOPS dense / 2039 GB/s = 306.03 op/B; fp16 312 / 2039 = 153.0
    text = invoke(*GEMM, "--dtype", "int8").stdout.splitlines()
    assert text[2] == "ridge 306.0 FLOP/B = dense peak 624 TOPS / 2039 GB/s (datasheet)"
    assert text[4].split()[-4:] == ["bound", "TOPS", "time", "align"]
    assert "TFLOP/s" not in "\n".join(text[:7])
    markdown = invoke(*GEMM, "--dtype", "int8", "--format", "markdown").stdout
    assert "dense peak 624 TOPS / 2039 GB/s" in markdown
    assert "| bound | TOPS | time | align |" in markdown
    fp16 = invoke(*GEMM).stdout.splitlines()
    assert fp16[2] == "ridge 153.0 FLOP/B = dense peak 312 TFLOP/s / 2039 GB/s (datasheet)"
    assert fp16[4].split()[-4:] == ["bound", "TFLOP/s", "time", "align"]


def test_int8_json_keeps_its_field_names(invoke):
    # 2 x 512^3 = 268,435,456 ops over 512^2 (A) + 512^2 (B) + 4 x 512^2 (C int32) = 1,572,864 B:
    # 170.67 op/B x 2039 GB/s = 348 TOPS, under the roof of 624, kept in attainable_tflops
    gemm = json.loads(invoke(*GEMM, "--dtype", "int8", "--format", "json").stdout)["gemms"][0]
    assert gemm["bytes"] == 1_572_864
    assert round(gemm["attainable_tflops"], 1) == round(268_435_456 / 1_572_864 * 2.039, 1)


def test_int8_html_page_says_tops(invoke):
    page = invoke(*GEMM, "--dtype", "int8", "--format", "html").stdout
    assert "dense peak 624 TOPS (int8) / 2039 GB/s" in page
    assert "peak 624 TOPS</text>" in page and "attainable TOPS" in page
    assert ">TOPS<" in page and ">TFLOP/s<" not in page  # the table's rate column
    # the entry's peaks, each run of dtypes followed by its own unit
    assert "fp32 19.5, tf32 156, fp16 312, bf16 312 TFLOP/s, int8 624 TOPS (dense)" in page
    fp16 = invoke(*GEMM, "--format", "html").stdout
    assert "dense peak 312 TFLOP/s (fp16)" in fp16 and ">TFLOP/s<" in fp16


def test_compare_and_hw_show_say_tops_for_int8(invoke):
    out = invoke("compare", MLP, "--hw", "a100", "--hw", "h100", "--dtype", "int8").stdout
    assert "(peaks int8 1979 vs 624 TOPS;" in out
    shown = invoke("hw", "show", "a100").stdout.splitlines()
    at = shown.index("int8             624          306.0   x16 (best x128)")
    assert shown[at + 1] == "(int8 peak in TOPS)"
    assert not any("in TOPS" in line for line in invoke("hw", "show", "v100").stdout.splitlines())
