"""The analyze command's outputs: the JSON contract, the table's width, CSV and Markdown."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent.parent / "examples" / "mlp-1024-4096-1000.yaml"
GEMM_KEYS = {"name", "layer", "pass", "m", "n", "k", "dtype", "flops", "bytes", "intensity",
             "bound", "attainable_tflops", "time_s", "aligned", "warnings"}


def test_json_contract_and_values_for_the_example_on_a100(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "a100-sxm4-80gb", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert {"model", "hardware", "dtype", "batch", "mode", "ridge", "gemms", "totals"} <= set(data)
    assert (data["model"], data["hardware"], data["dtype"], data["batch"], data["mode"]) == (
        "mlp-1024-4096-1000", "a100-sxm4-80gb", "fp16", 512, "train")
    # dense ridge: 312 TFLOP/s / 2039 GB/s = 153.02 FLOP/B (not the sparse "416")
    assert data["ridge"] == pytest.approx(153.02, abs=0.01)
    assert [g["name"] for g in data["gemms"]] == ["MM1", "MM2", "MM3", "MM4", "MM5"]
    mm1 = data["gemms"][0]
    assert GEMM_KEYS <= set(mm1)
    assert (mm1["m"], mm1["n"], mm1["k"], mm1["pass"]) == (512, 4096, 1024, "forward")
    assert mm1["flops"] == 4_294_967_296 and mm1["bytes"] == 13_631_488
    assert mm1["intensity"] == pytest.approx(315.08, abs=0.01)
    assert mm1["bound"] == "compute" and mm1["attainable_tflops"] == pytest.approx(312)
    # 4.295e9 FLOP / 312e12 FLOP/s = 13.77 us
    assert mm1["time_s"] == pytest.approx(4_294_967_296 / 312e12)
    assert mm1["aligned"] is True and isinstance(mm1["warnings"], list)
    # the dimension each operand runs along in PyTorch's row-major tensors: x W^T reads both
    # along K, dY W reads W along N, dW = X^T dY reads X^T along M and writes dW (out x in)
    # along M
    forward, data_grad, weight_grad = ({"a": "K", "b": "K", "c": "N"},
                                       {"a": "K", "b": "N", "c": "N"},
                                       {"a": "M", "b": "N", "c": "M"})
    assert [g["operand_rows"] for g in data["gemms"]] == [forward, forward, data_grad,
                                                          weight_grad, weight_grad]
    totals = data["totals"]
    assert set(totals) == {"flops", "bytes", "time_s", "memory_bound_time_fraction", "gemm_flops",
                           "gemm_time_s", "predicted_gemm_time_s", "predicted_time_s", "op_time_s",
                           "predicted_op_time_s", "recompute_flops", "recompute_gemm_flops",
                           "recompute_time_s", "predicted_recompute_time_s",
                           "parameters", "active_parameters"}
    # no recomputation (recompute none): nothing run again (tests/test_recompute_time.py)
    assert totals["recompute_flops"] == totals["recompute_time_s"] == 0
    assert data["ops"] == [] and totals["op_time_s"] == 0  # linear layers without bias/activation
    assert totals["parameters"] == totals["active_parameters"] == 1024 * 4096 + 4096 * 1000
    assert totals["flops"] == sum(g["flops"] for g in data["gemms"])
    assert totals["memory_bound_time_fraction"] == 0.0


def test_batch_1_on_v100_is_memory_bound(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "v100", "--batch", "1", "--format", "json")
    data = json.loads(result.stdout)
    assert data["ridge"] == pytest.approx(138.9, abs=0.05)  # 125 TFLOP/s / 900 GB/s
    mm1 = data["gemms"][0]
    assert mm1["bound"] == "memory"
    assert mm1["intensity"] == pytest.approx(1.0, abs=0.01)
    # attainable = intensity x bandwidth = 0.9988 FLOP/B x 900 GB/s = 0.899 TFLOP/s
    assert mm1["attainable_tflops"] == pytest.approx(0.9988 * 0.9, rel=1e-3)
    assert data["totals"]["memory_bound_time_fraction"] == 1.0


def test_mixed_bounds_time_fraction(invoke):
    # at batch 128 on V100: MM1..MM5 intensities are all ~ 2*128*ab/(2(128(a+b)+ab)) < 138.9
    data = json.loads(invoke("analyze", EXAMPLE, "--hw", "v100", "--batch", "128",
                             "--format", "json").stdout)
    assert {g["bound"] for g in data["gemms"]} == {"memory"}
    assert all(g["min_compute_bound_batch"] == 168 for g in data["gemms"])


def test_table_fits_in_100_columns(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "a100", "--batch", "1002")
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 100
    assert "MM5" in result.stdout and "ridge 153.0 FLOP/B" in result.stdout


def test_table_reports_misalignment(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "v100", "--batch", "1002")
    # grouped by the value: the batch dimension of MM1-MM3 and the K of the weight gradients
    assert ("warning: batch 1002: MM1, MM2, MM3, MM4, MM5: pad to 1008 (16-byte rule: multiples "
            "of 8 for fp16 Tensor Cores)") in result.stdout.replace("\n       ", " ")


def test_csv_has_one_row_per_gemm(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "v100", "--format", "csv", "--mode", "inference")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["name"] for r in rows] == ["MM1", "MM2"]
    assert rows[0]["flops"] == "4294967296"


def test_markdown_table(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "v100", "--format", "markdown")
    lines = result.stdout.splitlines()
    assert any(line.startswith("| GEMM | layer | pass |") for line in lines)
    assert sum(line.startswith("| MM") and "| fc" in line for line in lines) == 5
    assert any(line.startswith("| GEMM | roof | predicted |") for line in lines)  # time table


def test_several_hardware_entries_in_json_give_a_list(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "v100", "--hw", "a100", "--format", "json")
    data = json.loads(result.stdout)
    assert [d["hardware"] for d in data] == ["v100-sxm2-16gb", "a100-sxm4-80gb"]


def test_help_explains_commands(invoke):
    result = invoke("--help")
    assert result.exit_code == 0
    for word in ("analyze", "hw", "probe"):
        assert word in result.stdout
    assert "--hw" in invoke("analyze", "--help").stdout


@pytest.mark.parametrize("args", [("--help",), ("hw", "--help")])
def test_every_command_in_the_help_reads_as_a_whole_phrase(invoke, args):
    # click cuts a docstring's first sentence at ". " ("C(M, N) = A(M, K) .") or at the
    # width ("..."): each command says what it does in its own short line instead
    out = invoke(*args).stdout
    listed = out[out.index("Commands:"):].splitlines()[1:]
    assert listed and all(line.startswith("  ") and line.endswith(".") for line in listed)
    assert not any(line.endswith((" .", "...")) for line in listed), listed
    if args == ("--help",):
        assert "  gemm     The full verdict for one GEMM of shape M x N x K." in listed
        assert len(listed) == 7  # analyze, compare, gemm, hw, plan, probe, sweep: one line each


def test_python_dash_m_works(tmp_path):
    # cwd: the installed package, not the checkout (python puts the cwd first on sys.path)
    out = subprocess.run([sys.executable, "-m", "roofline", "--version"], capture_output=True,
                         text=True, check=True, cwd=tmp_path)
    assert out.stdout.startswith("roofline, version")


def test_import_stays_light(tmp_path):
    code = ("import sys, roofline, roofline.cli; "
            "heavy = [m for m in ('numpy', 'matplotlib', 'pynvml', 'torch', 'cpuinfo') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "[]"


def test_json_is_streamed_with_the_same_text_as_to_json(invoke):
    """analyze writes one report's JSON GEMM by GEMM (issue 9: memory); the text is unchanged."""
    from roofline.api import analyze_model
    from roofline.output.json import to_json

    result = invoke("analyze", EXAMPLE, "--hw", "v100", "--format", "json")
    expected = to_json(analyze_model(EXAMPLE, "v100").to_dict()) + "\n"
    assert result.stdout == expected
