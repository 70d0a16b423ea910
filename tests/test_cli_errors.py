"""Bad input never crashes: exit status 2 and one line on stderr naming the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.model.network import load_network

GOOD = "batch: 512\ndtype: fp16\nlayers:\n  - {type: linear, in: 1024, out: 4096}\n"


def run_model(invoke, tmp_path, text, *extra, name="model.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return invoke("analyze", path, "--hw", "v100-sxm2-16gb", *extra), str(path)


def one_error_line(result):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize("text, expected", [
    # docs/design.md's own example of the message shape
    ("batch: 8\ndtype: fp16\nlayers:\n  - {type: linear, in: 8, out: 8}\n"
     "  - {type: linear, in: 8, out: -5}\n",
     "layers[1].out: expected a positive integer, got -5"),
    ("batch: 8\ndtype: fp16\nlayers:\n  - {type: linear, in: 8}\n",
     "layers[0].out: missing required field"),
    ("batch: 8\ndtype: fp16\nlayers:\n  - {type: linear, in: '1024', out: 8}\n",
     "layers[0].in: expected a positive integer, got '1024'"),
    ("batch: 8\ndtype: fp16\nlayers:\n  - {type: conv3d, in: 8, out: 8}\n",
     "layers[0].type: unknown layer type 'conv3d' (known: linear, transformer, embedding, norm, conv2d, maxpool2d, avgpool2d, flatten, batchnorm, add)"),
    ("batch: 8\ndtype: fp12\nmlp: [8, 8]\n",
     "dtype: expected one of fp64, fp32, tf32, fp16, bf16, int8, fp8, got 'fp12'"),
    ("batch: 0\ndtype: fp16\nmlp: [8, 8]\n", "batch: expected a positive integer, got 0"),
    ("batch: 8\ndtype: fp16\nmlp: [8, 8]\nmode: eval\n",
     "mode: expected one of train, inference, got 'eval'"),
    ("batch: 8\ndtype: fp16\nmlp: [8, 0]\n", "mlp[1]: expected a positive integer, got 0"),
    ("batch: 8\ndtype: fp16\n", "layers: give exactly one of 'layers' or 'mlp'"),
    ("batch: 8\ndtype: fp16\nlayers: []\n", "layers: expected at least one layer"),
    ("batch: 8\ndtype: fp16\nlayers: {a: 1}\n", "layers: expected a list, got a dict"),
    ("batch: 8\ndtype: fp16\nmlp: [8, 8]\nbtach: 3\n", "btach: unknown field"),
    ("- 1\n- 2\n", "expected a mapping, got a list"),
    ("batch: [8\n", "invalid YAML: line 2, column 1"),
    ("", "file is empty"),
    ("!!python/object/apply:os.system ['echo hacked']\n", "invalid YAML"),
])
def test_bad_model_file(invoke, tmp_path, text, expected):
    result, path = run_model(invoke, tmp_path, text)
    line = one_error_line(result)
    assert line.startswith(f"Error: {path}: ")
    assert expected in line


def test_missing_file(invoke, tmp_path):
    result = invoke("analyze", tmp_path / "nope.yaml", "--hw", "v100")
    line = one_error_line(result)
    assert "nope.yaml: cannot read file: No such file or directory" in line


def test_directory_instead_of_file(invoke, tmp_path):
    result = invoke("analyze", tmp_path, "--hw", "v100")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_binary_file(invoke, tmp_path):
    path = tmp_path / "model.yaml"
    path.write_bytes(b"\xff\xfe\x00\x01")
    line = one_error_line(invoke("analyze", path, "--hw", "v100"))
    assert "cannot read file" in line


def test_unknown_hardware_suggests_the_closest(invoke, tmp_path):
    result, _ = run_model(invoke, tmp_path, GOOD)
    result = invoke("analyze", tmp_path / "model.yaml", "--hw", "a100-sxm4-8gb")
    line = one_error_line(result)
    assert "unknown hardware 'a100-sxm4-8gb'; did you mean a100-sxm4-80gb" in line


def test_dtype_the_hardware_lacks(invoke, tmp_path):
    result, _ = run_model(invoke, tmp_path, GOOD, "--dtype", "bf16")
    line = one_error_line(result)
    assert "v100-sxm2-16gb has no bf16 peak" in line


def test_unknown_dtype_option(invoke, tmp_path):
    result, _ = run_model(invoke, tmp_path, GOOD, "--dtype", "fp12")
    assert result.exit_code == 2
    assert "Invalid value for '--dtype'" in result.stderr


def test_bad_batch_option(invoke, tmp_path):
    result, _ = run_model(invoke, tmp_path, GOOD, "--batch", "-3")
    assert result.exit_code == 2
    assert "Invalid value for '--batch'" in result.stderr


def test_broken_hardware_file_given_by_path(invoke, tmp_path):
    hw = tmp_path / "mine.yaml"
    hw.write_text("name: mine\nkind: gpu\n")
    result, _ = run_model(invoke, tmp_path, GOOD)
    line = one_error_line(invoke("analyze", tmp_path / "model.yaml", "--hw", hw))
    assert f"{hw}: vendor: missing required field" in line


def test_options_read_as_keywords_in_the_library_and_as_flags_on_the_command_line(invoke):
    from roofline import analyze_model
    from roofline.analysis.measure import MeasureError, measure_report

    # the library's user passes arguments, so the message names them as keyword arguments
    report = analyze_model("examples/mlp-1024-4096-1000.yaml", "a100-sxm4-80gb")
    with pytest.raises(MeasureError) as caught:
        measure_report(report)
    assert "use hardware='local'" in str(caught.value)
    assert "--" not in str(caught.value).replace("probe --save", "")
    # the CLI's user typed flags, so the same error names the flags
    result = invoke("analyze", "examples/mlp-1024-4096-1000.yaml", "--hw", "a100-sxm4-80gb",
                    "--measure")
    assert result.exit_code == 2
    assert "Error: --measure: GEMMs are timed on this machine, but" in result.output
    assert "use --hw local (or an entry saved by `roofline probe --save` here)" in result.output


def test_missing_dtype_of_a_config_names_the_flag(invoke):
    result = invoke("analyze", "examples/hf/gpt2.json", "--hw", "a100-sxm4-80gb",
                    "--batch", "1", "--seq", "128")
    assert result.exit_code == 2
    assert "no torch_dtype read here: bfloat16, float16, float32 or float64; give --dtype)" in (
        result.output)


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MLP_EXAMPLE = EXAMPLES / "mlp-1024-4096-1000.yaml"


@pytest.mark.parametrize("args", [
    ("gemm", "64", "64", "64"), ("sweep", MLP_EXAMPLE, "--batch", "1,8"),
    ("plan", MLP_EXAMPLE, "--gpus", "8"),
])
def test_a_single_device_command_refuses_a_second_hw(invoke, args):
    # click keeps the last of a repeated option: the first device would go unanalyzed unsaid
    command = args[0]
    result = invoke(*args, "--hw", "a100", "--hw", "v100")
    assert result.exit_code == 2
    assert (f"Invalid value for '--hw': `roofline {command}` takes one device, given 2 (a100, "
            f"v100); `roofline compare` takes several") in result.stderr


def test_analyze_refuses_a_device_given_twice(invoke):
    # an alias and the name of one entry: the same device, its report printed twice
    line = one_error_line(invoke("analyze", MLP_EXAMPLE, "--hw", "a100", "--hw",
                                 "A100-SXM4-80GB"))
    assert line == "Error: --hw: a device is given twice: a100-sxm4-80gb, a100-sxm4-80gb"


def test_plan_of_an_inference_step_says_why_first(invoke):
    line = one_error_line(invoke("plan", EXAMPLES / "hf" / "llama-2-7b.json", "--hw", "h100", "--gpus",
                                 "1", "--batch", "1", "--seq", "2048", "--mode", "inference"))
    assert line == ("Error: --mode: inference, but `roofline plan` splits training steps only: "
                    "serving over several GPUs is `roofline analyze --tp N`'s (a step, or "
                    "--prompt P --generate G)")


@pytest.mark.parametrize("option", [("--phase", "decode"), ("--weights", "int4"),
                                    ("--kv-cache", "fp8"), ("--logits", "last"),
                                    ("--group-size", "64")])
def test_plan_refuses_a_serving_setting_without_sending_the_user_in_a_circle(invoke, option):
    # A serving engineer's tour: `plan ... --phase decode` read "--phase is an inference setting,
    # but the step trains (mode train): give --mode inference", and `--mode inference` then
    # "parallel layouts are modelled for training steps (give mode train)". Now the first says
    # that plan lays out training only; its --help no longer lists the inference options.
    line = one_error_line(invoke("plan", EXAMPLES / "hf" / "mixtral-8x7b.json", "--hw", "h100",
                                 "--gpus", "4", "--batch", "8", "--seq", "2048", *option))
    assert line.startswith(f"Error: {option[0]}: an inference setting, but `roofline plan` "
                           f"splits training steps only: serving over several GPUs is "
                           f"`roofline analyze --tp N`'s")
    assert "give --mode inference" not in line
    help_text = invoke("plan", "--help").stdout
    listed = help_text.split("Options:")[1]
    assert f"  {option[0]} " not in listed and "Training steps only" in help_text
    assert "  --mode " in listed  # a model.yaml of mode inference is planned with --mode train


def test_plan_of_an_inference_model_file_says_plan_is_for_training():
    from roofline.analysis.parallel import check_training

    network = load_network(EXAMPLES / "hf" / "llama-2-7b.json").with_overrides(
        batch=1, seq=16, mode="inference")
    with pytest.raises(InputError, match=r"training steps only, not for serving \(give mode "
                                         r"train\)"):
        check_training(network)


def test_plan_of_a_model_without_a_sequence_counts_samples(invoke):
    out = invoke("plan", MLP_EXAMPLE, "--hw", "h100", "--gpus", "1").stdout
    assert "training step: global batch 512, fp16" in out and "seq None" not in out
    assert "samples/s" in out and "tok/s" not in out
    assert "best on 1 GPU: " in out and "1 GPUs" not in out


@pytest.mark.parametrize("text, expected", [
    ('{"model_type": "llama", "hidden_size": 4096,', "config.json: invalid JSON (read as YAML, "
                                                     "which holds JSON): line 2, column 1"),
    ("{}", "config.json: model_type: missing: a Hugging Face config.json names its model_type "
           "(a model.yaml in JSON gives layers or mlp)"),
])
def test_a_broken_config_json_is_named_as_json(invoke, tmp_path, text, expected):
    result, _ = run_model(invoke, tmp_path, text, name="config.json")
    assert expected in one_error_line(result)


@pytest.mark.parametrize("text, expected", [
    ('{"model_type": "llama", "hidden_size": 64, "hidden_size": 64}',
     "config.json: hidden_size: duplicate key 'hidden_size' (JSON keys must be unique; the file "
     "gives it twice)"),
    # a JSON number, read as one (YAML 1.1 made 1e30 the string '1e30')
    ('{"model_type": "llama", "hidden_size": 1e30}',
     "config.json: hidden_size: expected a positive integer, got 1e+30"),
    ('{"model_type": "llama", "hidden_size": 4.096E3}',
     "config.json: hidden_size: expected a positive integer, got 4096.0"),
    # a negative integer is JSON's integer, echoed as written (it read as the float -1.0)
    ('{"model_type": "llama", "hidden_size": -1}',
     "config.json: hidden_size: expected a positive integer, got -1"),
])
def test_a_config_json_is_read_and_named_as_json(invoke, tmp_path, text, expected):
    result, _ = run_model(invoke, tmp_path, text, name="config.json")
    assert one_error_line(result).endswith(expected)


def test_json_numbers_are_numbers_and_yaml_keeps_its_own_rules():
    from roofline.errors import InputError
    from roofline.files.fields import load_yaml_text

    text = '{"a": 1e30, "b": -1.5E-5, "c": 10, "d": 0.5, "e": "1e3", "f": [1e2, 2]}'
    assert load_yaml_text(text, "config.json") == {
        "a": 1e30, "b": -1.5e-5, "c": 10, "d": 0.5, "e": "1e3", "f": [100.0, 2]}
    # integers, signed or not, are ints as JSON has them; a fraction or exponent makes a float
    signed = load_yaml_text('{"a": -1, "b": -0, "c": [-7], "d": -1E2, "e": -2.0}', "config.json")
    assert signed == {"a": -1, "b": 0, "c": [-7], "d": -100.0, "e": -2.0}
    assert [type(signed[k]) for k in "abde"] == [int, int, float, float]
    assert type(signed["c"][0]) is int
    # YAML 1.1, a model.yaml's rules: a float needs a dot, and its exponent a sign
    assert load_yaml_text("a: 1e30\nb: 1.0e+3\n", "model.yaml") == {"a": "1e30", "b": 1000.0}
    with pytest.raises(InputError, match="YAML keys must be unique"):
        load_yaml_text("a: 1\na: 2\n", "model.yaml")


LLAMA_EXAMPLE = EXAMPLES / "hf" / "llama-2-7b.json"
TOKENS_PAST = ("1048576 x 1048577 = 1.1e12 tokens is out of range (at most 2**40 = "
               "1099511627776")  # 2**20 x (2**20 + 1) = 2**40 + 2**20: one row too many a seq


@pytest.mark.parametrize("args", [
    ("analyze", LLAMA_EXAMPLE, "--hw", "h100"),
    ("compare", LLAMA_EXAMPLE, "--hw", "h100", "--hw", "a100"),
    ("plan", LLAMA_EXAMPLE, "--hw", "h100", "--gpus", "8"),
])
def test_batch_times_seq_has_the_bound_of_each(invoke, args):
    # each is at most 2**40 alone, but the rows of every per-token GEMM are their product
    line = one_error_line(invoke(*args, "--batch", "1048576", "--seq", "1048577"))
    assert line.startswith(f"Error: {LLAMA_EXAMPLE}: batch, seq: {TOKENS_PAST}")
    assert line.endswith("lower batch or seq (in the model or --batch / --seq)")


def test_batch_times_seq_at_the_bound_is_analyzed(invoke):
    # 2**20 x 2**20 = 2**40 rows exactly: the largest step allowed (M = 1099511627776)
    result = invoke("analyze", LLAMA_EXAMPLE, "--hw", "h100", "--batch", "1048576", "--seq",
                    "1048576", "--mode", "inference", "--format", "csv")
    assert result.exit_code == 0
    assert ",1099511627776,12288,4096," in result.stdout  # MM1, blk.1.qkv: M, N, K


def test_a_sweep_point_past_the_bound_stops_the_sweep_before_any_work(invoke, monkeypatch):
    from roofline.analysis import whatif

    def no_analysis(*args, **kwargs):
        raise AssertionError("a point was analyzed before the grid was checked")

    monkeypatch.setattr(whatif, "analyze", no_analysis)
    line = one_error_line(invoke("sweep", LLAMA_EXAMPLE, "--hw", "h100", "--batch",
                                 "8,1048576", "--seq", "1048577"))
    assert TOKENS_PAST in line


def test_a_model_file_whose_batch_times_seq_passes_the_bound(invoke, tmp_path):
    # batch 2**40 at seq 2 = 2**41 = 2.2e12 rows
    text = "batch: 1099511627776\nseq: 2\ndtype: fp16\nlayers:\n  - {type: linear, in: 8, out: 8}\n"
    result, path = run_model(invoke, tmp_path, text)
    assert one_error_line(result).startswith(f"Error: {path}: batch, seq: 1099511627776 x 2 = "
                                             f"2.2e12 tokens is out of range")


@pytest.mark.parametrize("text, name, path, shown", [
    # YAML's double-quoted escapes make the bytes; the message shows them escaped, never raw
    ('name: "a\\x1b[31mred"\nbatch: 8\ndtype: fp16\nmlp: [8, 8]\n', "model.yaml", "name",
     "\\x1b"),
    ('batch: 8\ndtype: fp16\nlayers:\n  - {type: linear, in: 8, out: 8, name: "fc\\r"}\n',
     "model.yaml", "layers[0].name", "\\r"),
    ('batch: 8\ndtype: fp16\nmlp: [8, 8]\nname: "\\u202egnp.exe"\n', "model.yaml", "name",
     "\\u202e"),  # a right-to-left override
    ('{"model_type": "llama", "na\\u001bme": 1}', "config.json", "na\\x1bme", "\\x1b"),  # a key
])
def test_text_with_a_control_character_is_refused_naming_the_field(invoke, tmp_path, text,
                                                                    name, path, shown):
    result, file = run_model(invoke, tmp_path, text, name=name)
    line = one_error_line(result)
    assert line == (f"Error: {file}: {path}: text holds the control character {shown}, which a "
                    f"terminal would act on instead of showing: remove it")
    assert "\x1b" not in result.output and "\r" not in result.output


def test_tabs_and_newlines_stay_text():
    from roofline.errors import control_character
    from roofline.files.fields import load_yaml_text

    # a hardware entry's notes run over lines; a tab is text too
    assert load_yaml_text("notes: |\n  one\n  two\ttabbed\n", "x.yaml") == {
        "notes": "one\ntwo\ttabbed\n"}
    assert control_character("one\ntwo\tthree") is None
    assert control_character("a\x9bb\x1b") == "\\x9b"  # the first: C1's CSI


def test_a_model_named_by_its_file_shows_a_control_character_escaped(invoke, tmp_path):
    # a model without name: is named by its file's stem, which the file cannot refuse
    result, _ = run_model(invoke, tmp_path, "batch: 8\ndtype: fp16\nmlp: [8, 8]\n",
                          name="st\x1b[31mem.yaml")
    assert result.exit_code == 0
    assert result.stdout.startswith("st\\x1b[31mem on v100-sxm2-16gb: fp16, batch 8")
    assert "\x1b" not in result.stdout


def test_a_long_per_row_output_says_so_first(invoke, tmp_path, monkeypatch):
    # JSON, CSV and HTML write every copy of a repeated layer (a 10,000-block transformer:
    # 100,000 rows, seconds to write): past ROWS_SAID rows a line on stderr says so first. Here
    # 3 blocks of 4 GEMMs and 6 ops, 30 rows, against a bound of 20; the table, which shows the
    # first copy, says nothing
    import roofline.cli.reports

    monkeypatch.setattr(roofline.cli.reports, "ROWS_SAID", 20)  # where _say_rows reads it
    model = tmp_path / "blocks.yaml"
    model.write_text("batch: 1\ndtype: fp16\nseq: 16\nmode: inference\nlayers:\n"
                     "  - {type: transformer, hidden: 64, heads: 4, repeat: 3}\n")
    out = invoke("analyze", model, "--hw", "a100", "--format", "json")
    rows = len(json.loads(out.stdout)["gemms"]) + len(json.loads(out.stdout)["ops"])
    assert out.stderr == f"writing json for {rows} GEMMs and ops (every copy of a repeated layer)...\n"
    assert rows > 20
    assert invoke("analyze", model, "--hw", "a100").stderr == ""


@pytest.mark.parametrize("args, expected", [
    # click read a word starting with '-' as an option: "No such option '-1'"
    (("-1", "5", "5", "--hw", "a100"), "Error: gemm: M: expected a positive integer, got '-1'"),
    (("5", "-1", "5", "--hw", "a100", "--dtype", "int8"),
     "Error: gemm: N: expected a positive integer, got '-1'"),
    (("--hw", "a100", "5", "5", "-2.5"),
     "Error: gemm: K: expected a positive integer, got '-2.5'"),
    (("--hw=a100", "5", "-0", "5"), "Error: gemm: N: expected a positive integer, got '-0'"),
    # an option still misspelt is click's error, its suggestions kept
    (("-1", "5", "5", "--hw", "a100", "--dtyp", "fp16"),
     "Error: No such option '--dtyp'. (Did you mean one of: '--dtype', '--output-dtype'?) "
     "(see `roofline gemm --help`)"),
    (("-1", "5", "5", "5", "--hw", "a100"),
     "Error: Got unexpected extra argument (5) (see `roofline gemm --help`)"),
])
def test_a_negative_gemm_dimension_is_a_dimension_refused(invoke, args, expected):
    assert one_error_line(invoke("gemm", *args)) == expected


def test_gemm_still_reads_its_options_around_its_arguments(invoke):
    import json as json_module

    out = invoke("gemm", "--format", "json", "8", "16", "--hw", "a100", "32", "--dtype", "bf16")
    assert out.exit_code == 0, out.output
    report = json_module.loads(out.stdout)
    assert (report["gemms"][0]["m"], report["gemms"][0]["n"], report["gemms"][0]["k"],
            report["dtype"]) == (8, 16, 32, "bf16")


@pytest.mark.parametrize("command", [("analyze", "--hw", "a100"),
                                     ("compare", "--hw", "a100", "--hw", "h100"),
                                     ("sweep", "--hw", "a100", "--batch", "1,2"),
                                     ("plan", "--hw", "h100", "--gpus", "8")])
def test_an_empty_model_path_is_said_to_be_empty(invoke, command):
    # click's Path type made '' the directory '.': ".: cannot read file: a directory"
    name, *rest = command
    assert one_error_line(invoke(name, "", *rest)) == (
        "Error: model: expected a model file's path, got an empty path ''")


def test_the_library_refuses_an_empty_model_path():
    from roofline import InputError, analyze_model

    with pytest.raises(InputError, match=r"^model: expected a model file's path, got an empty "
                                         r"path ''$"):
        analyze_model("", "a100")


def test_ctrl_c_is_one_line_and_exit_130():
    """A real SIGINT to a running command: 'Interrupted.' on stderr and exit 130 (128 + SIGINT,
    as a shell reports it), no traceback; click's own handling said 'Aborted!' and exited 1."""
    import signal
    import subprocess
    import sys

    script = ("import sys, time\n"
              "from roofline.cli import group, main\n"
              "@group.cli.command('nap')\n"
              "def nap():\n"
              "    print('ready', flush=True)\n"
              "    time.sleep(60)\n"
              "sys.argv = ['roofline', 'nap']\n"
              "main()\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 130, err
    assert err == "Interrupted.\n"


@pytest.mark.parametrize("given, spec, where", [
    ("examples/torch_mlp.py", "examples.torch_mlp:<callable>", "the current folder"),
    ("examples/torch_mlp.py:make", "examples.torch_mlp:make", "the current folder"),
    ("./examples/torch_mlp.py:make", "examples.torch_mlp:make", "the current folder"),
])
def test_a_python_file_says_how_to_name_its_factory(invoke, monkeypatch, given, spec, where):
    """A Python file given as MODEL was read as YAML ('invalid YAML: line 1, column 3'), and
    ``file.py:make`` was 'cannot read file'; each now says how to name the callable."""
    monkeypatch.chdir(EXAMPLES.parent)
    for command in (("analyze",), ("sweep", "--batch", "1,8")):
        line = one_error_line(invoke(*command, given, "--hw", "h100"))
        assert line == (f"Error: {given}: a Python file, not a model.yaml or config.json: to "
                        "capture a PyTorch module, name the callable that returns it and its "
                        f"inputs as package.module:callable, {spec} (imported from {where})")


def test_plan_of_a_python_file_says_plan_needs_a_model_file(invoke, monkeypatch):
    """plan takes no capture: a factory's file is refused as the factory is, not sent to
    spell a factory plan refuses next."""
    monkeypatch.chdir(EXAMPLES.parent)
    line = one_error_line(invoke("plan", "examples/torch_mlp.py", "--hw", "h100", "--gpus", "8",
                                 "--batch", "8"))
    assert line.startswith("Error: examples/torch_mlp.py: `roofline plan` needs a model.yaml or "
                           "config.json")


def test_a_python_file_outside_the_folder_names_its_own(invoke, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    given = str(EXAMPLES / "torch_mlp.py") + ":make"
    line = one_error_line(invoke("analyze", given, "--hw", "h100"))
    assert line.endswith(f"torch_mlp:make (imported from its folder: cd {EXAMPLES} first)")
    # a file whose name is no module name stays a file read as YAML
    odd = tmp_path / "my-model.py"
    odd.write_text("import torch\n")
    assert "a Python file" not in one_error_line(invoke("analyze", odd, "--hw", "h100"))
