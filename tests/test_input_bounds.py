"""Issue 25's input classes in the library (the installed command is tests/test_hostile_inputs.py):
one integer parser, one plausible-range check, config.json errors named by the config's keys,
atomic writes of every file, and stdout that cannot be written."""

from __future__ import annotations

import errno
import io
import json
import os
import sys

import pytest

from roofline.analysis.whatif import gemm_report
from roofline.analysis.whatif_values import parse_batches
from roofline.errors import InputError, PlotError
from roofline.files.atomic import write_atomic
from roofline.files.numbers import MAX_INT, OutOfRange, parse_int, parse_number, plausible
from roofline.model.network import load_network, network_from_yaml

LLAMA = "examples/hf/llama-2-7b.json"
GPT2 = "examples/hf/gpt2.json"


@pytest.mark.parametrize("text, value", [("8", 8), (" 512 ", 512), ("1_024", 1024),
                                         ("0008", 8), (str(2**40), 1_099_511_627_776)])
def test_parse_int_reads_ascii_digits(text, value):
    assert parse_int(text) == value


@pytest.mark.parametrize("text", ["²", "٣", "８", "1e3", "-5", "0", "", "1__0", "_1", "0x10",
                                  "8.0", "1,2"])
def test_parse_int_refuses_what_is_not_ascii_digits(text):
    # '²'.isdigit() and '٣'.isdigit() are True; int('٣') is 3 and int('８') is 8: not here
    with pytest.raises(ValueError, match="expected a positive integer"):
        parse_int(text)


def test_parse_int_bounds():
    with pytest.raises(OutOfRange, match=r"1099511627777 is out of range \(at most 2\*\*40 = "
                                         r"1099511627776\)"):
        parse_int(str(2**40 + 1))
    with pytest.raises(OutOfRange, match="an integer of 401 digits is out of range"):
        parse_int("1" + "0" * 400)  # never handed to int(): 41+ characters are refused first
    assert parse_int("0", low=0, high=3) == 0
    with pytest.raises(OutOfRange, match=r"4 is out of range \(at most 3\)"):
        parse_int("4", low=0, high=3)
    assert MAX_INT == 1_099_511_627_776


@pytest.mark.parametrize("text, value", [("25", 25.0), ("12.5", 12.5), ("1e-3", 0.001),
                                         (".5", 0.5), (" 1E3 ", 1000.0)])
def test_parse_number_reads_ascii_numbers(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["nan", "inf", "٣", "1_0", "", "1e", "--1"])
def test_parse_number_refuses_the_rest(text):
    with pytest.raises(ValueError, match="expected a number"):
        parse_number(text)


def test_one_plausible_range_for_every_bandwidth():
    # 1e-3 to 1e7 GB/s: the ends are plausible, past them is not
    assert plausible(1e-3, "bandwidth_gbs") is None and plausible(1e7, "bandwidth_gbs") is None
    assert plausible(1e-320, "bandwidth_gbs", "1e-320") == (
        "1e-320 GB/s is implausible (expected 0.001 to 1e+07)")
    assert plausible(float("nan"), "bandwidth_gbs") is not None
    assert plausible(float("inf"), "peak_tflops") is not None
    assert "an integer of 401 digits" in plausible(10**400, "bandwidth_gbs")


def test_sweep_range_reaches_its_end_up_to_2_to_the_40():
    # 1..10**12: 2^0 .. 2^39 (2^39 = 549,755,813,888 < 10^12 < 2^40 = 1,099,511,627,776),
    # then the end typed, 10^12: 41 points
    batches = parse_batches(f"1..{10**12}")
    assert len(batches) == 41 and batches[-2:] == (549_755_813_888, 10**12)
    assert parse_batches("2000000000..3000000000") == (  # 2^31 between
        2_000_000_000, 2_147_483_648, 3_000_000_000)
    assert len(parse_batches(f"1..{2**40}")) == 41  # 2^0 .. 2^40, the ends among them
    with pytest.raises(InputError, match=r"at most 2\*\*40"):
        parse_batches(f"1..{10**13}")


def test_gemm_dimensions_are_bounded_as_ints_too():
    with pytest.raises(InputError, match="K: an integer of 401 digits is out of range"):
        gemm_report(1, 1, 10**400, "a100")
    with pytest.raises(InputError, match="M: expected a positive integer, got '²'"):
        gemm_report("²", 1, 1, "a100")


@pytest.mark.parametrize("key, value", [("stride", 2**40 + 1), ("padding", 10**39),
                                        ("dilation", "[1, 1099511627777]")])
def test_conv_window_fields_have_the_integer_bound(key, value):
    text = ("batch: 8\ndtype: fp16\ninput: {channels: 3, height: 32, width: 32}\nlayers:\n"
            f"  - {{type: conv2d, out_channels: 8, kernel: 3, {key}: {value}}}\n")
    with pytest.raises(InputError, match=f"layers\\[0\\].{key}: .* is out of range"):
        network_from_yaml(text, "m.yaml")


def _config(tmp_path, base: str, **changes) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(open(base).read()), **changes}))
    return str(path)


@pytest.mark.parametrize("base, changes, path, problem", [
    (LLAMA, {"num_key_value_heads": 5}, "num_key_value_heads",
     "expected a divisor of num_attention_heads (32), got 5"),
    (LLAMA, {"hidden_size": 4097}, "num_attention_heads",
     "hidden_size (4097) is not a multiple of num_attention_heads (32); give head_dim"),
    (LLAMA, {"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3},
     "num_experts_per_tok", "expected at most num_local_experts (2), got 3"),
    (GPT2, {"n_head": 5}, "n_head", "n_embd (768) is not a multiple of n_head (5)"),
])
def test_config_errors_name_the_key_the_user_wrote(tmp_path, base, changes, path, problem):
    with pytest.raises(InputError) as caught:
        load_network(_config(tmp_path, base, **changes))
    assert caught.value.path == path
    assert caught.value.problem.startswith(problem)
    assert "layers[" not in str(caught.value)


def test_write_atomic_text_bytes_and_writer(tmp_path):
    target = tmp_path / "out" / "out.bin"  # the folder is made
    write_atomic(target, "é\n")
    assert target.read_bytes() == "é\n".encode()
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    write_atomic(target, lambda handle: handle.write(b"abc"))
    assert target.read_bytes() == b"abc"
    with pytest.raises(FileExistsError):
        write_atomic(target, "new", force=False)
    assert target.read_bytes() == b"abc" and os.listdir(target.parent) == ["out.bin"]


@pytest.mark.parametrize("suffix", ["svg", "pdf", "png"])
def test_a_chart_on_a_full_disk_leaves_the_old_one_whole(tmp_path, monkeypatch, suffix):
    pytest.importorskip("matplotlib")
    from roofline.api import analyze_model
    from roofline.plot import save_plot

    report = analyze_model("examples/mlp-1024-4096-1000.yaml", "a100")
    (tmp_path / "charts").mkdir()
    target = tmp_path / "charts" / f"chart.{suffix}"
    save_plot(report, target)
    before = target.read_bytes()
    assert before  # a whole chart

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(PlotError, match="cannot write the plot: No space left on device"):
        save_plot(report, target, force=True)
    assert target.read_bytes() == before  # not truncated
    assert os.listdir(target.parent) == [target.name]  # no temp file left


class _Failing(io.TextIOBase):
    """A stdout whose writes fail like a full device or a closed pipe."""

    def __init__(self, code: int) -> None:
        self.code = code

    def write(self, text: str) -> int:
        raise OSError(self.code, os.strerror(self.code))

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("code, status, message", [
    (errno.ENOSPC, 2, "Error: cannot write the output: No space left on device\n"),
    (errno.EPIPE, 1, ""),  # the reader went away (| head -1): nothing to tell it
])
def test_stdout_that_cannot_be_written_is_one_line(monkeypatch, capsys, code, status, message):
    from roofline.cli import main

    monkeypatch.setattr(sys, "argv", ["roofline", "hw", "list"])
    monkeypatch.setattr(sys, "stdout", _Failing(code))
    with pytest.raises(SystemExit) as caught:
        main()
    assert caught.value.code == status
    assert capsys.readouterr().err == message


V100_ENTRY = "hwdb/gpu/v100-sxm2-16gb.yaml"


@pytest.mark.parametrize("written, message", [
    # YAML 1.1 (PyYAML) reads an exponent without a sign, or a mantissa without a dot, as text
    ("2.0e1", "got '2.0e1' (text to YAML 1.1: write 2.0e+1)"),
    ("1e2", "got '1e2' (text to YAML 1.1: write 1.0e+2)"),
    ("15E-1", "got '15E-1' (text to YAML 1.1: write 15.0E-1)"),
    ("'2.0e+1'", "got '2.0e+1' (quoted: write 2.0e+1 without quotes)"),
    ("abc", "got 'abc'"),  # not a number to Python either: no hint
    ("'inf'", "got 'inf'"),  # no exponent form: no hint
])
def test_a_number_yaml_reads_as_text_says_how_to_write_it(tmp_path, written, message):
    from roofline import load_hardware

    with open(V100_ENTRY) as f:
        text = f.read().replace("fp32: 15.7, fp16", f"fp32: {written}, fp16")
    path = tmp_path / "box.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_hardware(path)
    assert str(caught.value) == (f"{path}: peak_tflops.fp32: expected a positive number, "
                                 f"{message}")


def test_the_written_form_is_a_number_to_yaml(tmp_path):
    # the hint's spelling is read back as the number (20 TFLOP/s, V100's fp32 then 20.0)
    from roofline import load_hardware

    with open(V100_ENTRY) as f:
        text = f.read().replace("fp32: 15.7, fp16", "fp32: 2.0e+1, fp16")
    (tmp_path / "box.yaml").write_text(text)
    spec = load_hardware(tmp_path / "box.yaml")
    assert spec.peak_flops_per_s("fp32") == 20e12


def test_a_json_file_text_gets_no_yaml_hint():
    # in a .json file "2.0e13" in quotes is text to JSON too; JSON's own 2.0e13 is a number
    from roofline.files.fields import yaml_number_hint

    assert yaml_number_hint("2.0e13", "config.json") == ""
    assert yaml_number_hint("2.0e13", "box.yaml") == " (text to YAML 1.1: write 2.0e+13)"
