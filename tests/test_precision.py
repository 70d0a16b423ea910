"""The precision of C: its own dtype (int8 -> int32, fp8 -> bf16 by default) and weight
gradients accumulated into a wider buffer (C read and written). Expectations by hand."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from roofline import analyze_model, network_from_yaml
from roofline.errors import InputError
from roofline.model.gemm import Gemm, gemm_bytes, gemm_intensity

EXAMPLE = Path(__file__).parent.parent / "examples" / "mlp-1024-4096-1000.yaml"


def test_int8_gemm_writes_int32_by_default_and_turns_memory_bound_on_h100():
    # 1024^3 int8 -> int32: A 1024*1024*1 + B 1024*1024*1 + C 1024*1024*4 = 6,291,456 bytes;
    # 2*1024^3 / 6,291,456 = 341.3 FLOP/B, below the H100 SXM5's int8 ridge 1979 / 3.35 = 590.7
    assert gemm_bytes(1024, 1024, 1024, "int8") == 6_291_456
    assert gemm_intensity(1024, 1024, 1024, "int8") == pytest.approx(341.33, abs=0.01)
    net = network_from_yaml("batch: 1024\ndtype: int8\nmode: inference\nmlp: [1024, 1024]")
    report = analyze_model(net, "h100-sxm5-80gb")
    assert report.ridge == pytest.approx(590.7, abs=0.05)
    (mm1,) = report.results
    assert (mm1.gemm.c_dtype, mm1.gemm.bytes, mm1.bound) == ("int32", 6_291_456, "memory")
    # with an int8 output the same GEMM is 3 x 1,048,576 = 3,145,728 bytes, 682.7 FLOP/B
    same = analyze_model(net, "h100-sxm5-80gb", output_dtype="int8").results[0]
    assert same.gemm.bytes == 3_145_728 and same.bound == "compute"
    assert same.gemm.intensity == pytest.approx(682.67, abs=0.01)


def test_fp8_writes_bf16_by_default():
    # A and B 1 B each, C 2 B: 1024*1024*(1 + 1 + 2) = 4,194,304 bytes
    assert Gemm("MM1", "l", "forward", 1024, 1024, 1024, "fp8").bytes == 4_194_304
    assert Gemm("MM1", "l", "forward", 1024, 1024, 1024, "fp8").c_dtype == "bf16"


def test_weight_gradients_accumulating_in_fp32_are_memory_bound_on_a100_and_h100():
    # MM4 = 4096 x 1000 x 512 fp16 into an fp32 buffer, read and written:
    # A 2*4096*512 = 4,194,304; B 2*512*1000 = 1,024,000; C 4*4096*1000*2 = 32,768,000
    # total 37,986,304 bytes; 2*4096*1000*512 / 37,986,304 = 110.4 FLOP/B
    for hardware, ridge in (("a100-sxm4-80gb", 153.0), ("h100-sxm5-80gb", 295.4)):
        report = analyze_model(EXAMPLE, hardware, grad_accumulation="fp32")
        mm4 = report.results[3]
        assert (mm4.gemm.name, mm4.gemm.pass_) == ("MM4", "backward-weight")
        assert mm4.gemm.bytes_by_operand == {"a": 4_194_304, "b": 1_024_000, "c": 32_768_000}
        assert mm4.gemm.bytes == 37_986_304
        assert mm4.gemm.intensity == pytest.approx(110.4, abs=0.05)
        assert report.ridge == pytest.approx(ridge, abs=0.1) and mm4.bound == "memory"
        assert report.totals["memory_bound_time_fraction"] > 0
        # forward and data-gradient GEMMs keep C in fp16, written once
        assert [r.gemm.c_read for r in report.results] == [False, False, False, True, True]


def test_batch_advice_follows_the_wider_c():
    # MM4 with D = batch as K: bytes = 2*4096*D + 2*D*1000 + 4*2*4096*1000 = 10,192 D + 32,768,000
    # I(D) = 8,192,000 D / (10,192 D + 32,768,000) >= 312/2.039 = 153.016
    # D >= 153.016 * 32,768,000 / (8,192,000 - 153.016 * 10,192) = 755.98 -> 756
    mm4 = analyze_model(EXAMPLE, "a100", grad_accumulation="fp32").results[3]
    assert mm4.min_compute_bound_batch == 756


def test_model_yaml_keys_and_cli_overrides(invoke, tmp_path):
    model = tmp_path / "m.yaml"
    model.write_text("batch: 512\ndtype: fp16\noutput_dtype: fp32\ngrad_accumulation: fp32\n"
                     "mlp: [1024, 4096, 1000]\n")
    data = json.loads(invoke("analyze", model, "--hw", "a100", "--format", "json").stdout)
    assert (data["output_dtype"], data["grad_accumulation"]) == ("fp32", "fp32")
    mm1 = data["gemms"][0]
    # fp32 output: C = 4*512*4096 = 8,388,608 B beside A 2*512*1024 and B 2*1024*4096
    assert mm1["bytes_by_operand"] == {"a": 1_048_576, "b": 8_388_608, "c": 8_388_608}
    assert (mm1["c_dtype"], mm1["c_read"]) == ("fp32", False)
    data = json.loads(invoke("analyze", model, "--hw", "a100", "--format", "json",
                             "--grad-accumulation", "none", "--output-dtype", "fp16").stdout)
    assert data["grad_accumulation"] is None
    assert [g["c_read"] for g in data["gemms"]] == [False] * 5
    # back to 2*(4096*512 + 512*1000 + 4096*1000) = 2*6,705,152 = 13,410,304
    assert data["gemms"][3]["bytes"] == 13_410_304


def test_every_report_format_states_the_precision(invoke):
    args = ("analyze", EXAMPLE, "--hw", "a100", "--grad-accumulation", "fp32")
    wanted = "A, B fp16 -> C fp16; weight gradients accumulate into fp32 (C read and written)"
    assert wanted in invoke(*args).stdout
    # Markdown writes ">" as an entity (it would read "->" again rendered)
    assert wanted.replace(">", "&gt;") in invoke(*args, "--format", "markdown").stdout
    rows = list(csv.DictReader(io.StringIO(invoke(*args, "--format", "csv").stdout)))
    assert (rows[3]["c_dtype"], rows[3]["c_read"], rows[3]["bytes_c"]) == ("fp32", "True",
                                                                            "32768000")
    report = analyze_model(EXAMPLE, "a100", grad_accumulation="fp32")
    assert wanted.replace(">", "&gt;") in report._repr_html_()
    inference = analyze_model(EXAMPLE, "a100", mode="inference")
    from roofline.output.report import report_table

    assert "precision: A, B fp16 -> C fp16\n" in report_table(inference)


@pytest.mark.parametrize("text, message", [
    ("output_dtype: tf32", "output_dtype: expected one of fp64, fp32, fp16, bf16, int32, int8, "
                           "fp8, got 'tf32'"),
    ("grad_accumulation: int8", "grad_accumulation: expected one of none, fp64, fp32, fp16, bf16,"
                                " got 'int8'"),
])
def test_bad_precision_fields(invoke, tmp_path, text, message):
    model = tmp_path / "m.yaml"
    model.write_text(f"batch: 8\ndtype: fp16\n{text}\nmlp: [8, 8]\n")
    result = invoke("analyze", model, "--hw", "a100")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {model}: {message}"


FLOAT_INTO_INTEGER = ("math cannot write an {out} output: a float GEMM writes a float C (fp32, "
                      "fp16, bf16, ...); integer outputs come from int8 GEMMs")


@pytest.mark.parametrize("dtype, out", [("fp16", "int32"), ("fp32", "int8"), ("fp8", "int32"),
                                        ("tf32", "int32"), ("bf16", "int8")])
def test_a_float_gemm_never_writes_an_integer_c(invoke, tmp_path, dtype, out):
    """A float GEMM's products are fractions; no library writes them to an integer C, so the
    pair is refused in one line, from --output-dtype and a model's output_dtype alike."""
    expected = f"{dtype} " + FLOAT_INTO_INTEGER.format(out=out)
    result = invoke("gemm", "512", "512", "512", "--hw", "h100", "--dtype", dtype,
                    "--output-dtype", out)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"Error: --output-dtype: {expected}\n"
    model = tmp_path / "m.yaml"
    model.write_text(f"batch: 8\ndtype: {dtype}\noutput_dtype: {out}\nmlp: [64, 64]\n")
    result = invoke("analyze", model, "--hw", "h100")
    assert result.exit_code == 2
    assert result.stderr == f"Error: {model}: output_dtype: {expected}\n"
    with pytest.raises(InputError, match=f"output_dtype: {dtype} math cannot write"):
        analyze_model(EXAMPLE, "h100", dtype=dtype, output_dtype=out)


@pytest.mark.parametrize("dtype, out, c_bytes", [
    ("int8", "int32", 4), ("int8", "int8", 1), ("int8", "fp16", 2), ("int8", "bf16", 2),
    ("fp8", "bf16", 2), ("fp8", "fp16", 2), ("fp8", "fp32", 4), ("fp16", "fp32", 4),
    ("fp64", "fp16", 2)])
def test_the_outputs_libraries_write_are_kept(invoke, dtype, out, c_bytes):
    """Integer math into any C (int32 exact, int8 requantized, a float dequantized) and float
    math into another float stay: 512^3, A and B 512 x 512 operand elements each, C 512 x 512
    of the output's size."""
    e = 8 if dtype == "fp64" else 1 if dtype in ("int8", "fp8") else 2
    assert invoke("gemm", "512", "512", "512", "--hw", "h100", "--dtype", dtype,
                  "--output-dtype", out, "--format", "json").exit_code == 0
    from roofline.analysis.whatif import gemm_report

    mm1 = gemm_report(512, 512, 512, "h100", dtype=dtype, output_dtype=out).results[0]
    assert mm1.gemm.c_dtype == out
    assert mm1.gemm.bytes == 2 * 512 * 512 * e + 512 * 512 * c_bytes
