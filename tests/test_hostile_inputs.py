"""A hostile and clumsy corpus (issue 9), run through the INSTALLED ``roofline`` command in a
temporary HOME and $ROOFLINE_HWDB: each case ends with its expected exit status and, for bad
input, one line on stderr naming the file and the field. No hang (every run has a timeout),
no crash, no traceback, no silent loss.

All cases start at once (a module fixture with a thread pool), so the file stays fast; each
parametrized test then checks one case's result against hand-written expectations.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# ~70 subprocesses of ~0.25 s of CPU each (interpreter start, imports, the bundled catalogue;
# none waits: the FIFO cases are refused before any open): ~10 s on two cores. --durations
# shows it all as the setup of the first case (fifo-model), where the module fixture runs.
pytestmark = pytest.mark.slow

ROOFLINE = Path(sys.executable).parent / "roofline"
V100 = Path(__file__).resolve().parents[1] / "hwdb" / "gpu" / "v100-sxm2-16gb.yaml"
GOOD = "batch: 8\ndtype: fp16\nmlp: [8, 16, 8]\n"
LAYER = "batch: 8\ndtype: fp16\nlayers:\n  - {type: linear, in: %s, out: 8}\n"
BOMB = "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10) if p else '1, 1, 1, 1, 1, 1, 1, 1, 1, 1'}]\n"
               for p, c in zip(["", "a", "b", "c", "d"], "abcde"))


def entry(name: str, replace: dict[str, str] | None = None, extra: str = "") -> str:
    """The bundled V100 entry renamed ``name``, lines starting with a key replaced."""
    lines = []
    for line in V100.read_text().splitlines():
        key = line.split(":")[0]
        line = {"name": f"name: {name}", "aliases": "aliases: []"}.get(key, line)
        lines.append((replace or {}).get(key, line))
    return "\n".join(lines) + "\n" + extra


@dataclass
class Case:
    args: list[str]                      # {model}, {hwdb} and {tmp} are filled in
    code: int
    names: list[str] = field(default_factory=list)  # what stderr's one line must contain
    model: str | bytes | None = None     # written to {model} (model.yaml)
    user: dict[str, str] = field(default_factory=dict)  # files in the user hwdb dir
    fifo: str | None = None              # a FIFO made at this path (under {tmp})
    env: dict[str, str] = field(default_factory=dict)
    warns: list[str] = field(default_factory=list)  # exit 0 with these Warning: lines
    usage: bool = False                  # click's own usage error (Usage / Try / Error lines)


AN = ["analyze", "{model}", "--hw", "a100"]
CASES = {
    # files that are not regular files, or too large
    "fifo-model": Case(["analyze", "{tmp}/pipe.yaml", "--hw", "a100"], 2,
                       ["pipe.yaml: cannot read file: a FIFO"], fifo="pipe.yaml"),
    "dev-zero-model": Case(["analyze", "/dev/zero", "--hw", "a100"], 2,
                           ["/dev/zero: cannot read file: a character device"]),
    "dev-urandom-hw": Case(["analyze", "{model}", "--hw", "/dev/urandom"], 2,
                           ["/dev/urandom: cannot read file: a character device"], model=GOOD),
    "directory-model": Case(["analyze", "{tmp}", "--hw", "a100"], 2, usage=True),  # click's
    "directory-hw": Case(["analyze", "{model}", "--hw", "{tmp}/"], 2,
                         ["cannot read file: a directory"], model=GOOD),
    "fifo-in-user-dir": Case(AN, 0, model=GOOD, fifo="hwdb/pipe.yaml",
                             warns=["pipe.yaml: cannot read file: a FIFO", "entry skipped"]),
    "huge-file": Case(AN, 2, ["model.yaml: file is larger than 16 MiB"],
                      model="#" + "x" * (17 * 2**20) + "\n" + GOOD),
    "missing-hw-file": Case(["analyze", "{model}", "--hw", "{tmp}/nope.yaml"], 2,
                            ["nope.yaml: cannot read file: No such file"], model=GOOD),
    # nesting, aliases
    # past about 1000 flow levels PyYAML 6.0.4 and newer stop at their own limit ("exceeded
    # maximum nesting depth", with line and column) before roofline's composer counts them
    "deep-150": Case(AN, 2, ["model.yaml: name[0][0]", "nested deeper than 100 levels"],
                     model="name: " + "[" * 150 + "]" * 150 + "\n" + GOOD),
    "deep-100000": Case(AN, 2, ["model.yaml: ", "nest"],
                        model="name: " + "[" * 100_000 + "]" * 100_000 + "\n" + GOOD),
    "deep-150-in-layer": Case(AN, 2, ["model.yaml: layers[0].out[0]", "nested deeper"],
                              model=LAYER.replace("out: 8", "out: " + "[" * 150 + "]" * 150)
                              % 8),
    "deep-1000-in-layer": Case(AN, 2, ["model.yaml: ", "nest"],
                               model=LAYER.replace("out: 8", "out: " + "[" * 1000 + "]" * 1000)
                               % 8),
    "deep-block-style": Case(AN, 2, ["nested deeper than 100"],
                             model=GOOD + "name:\n  " + "- " * 150 + "x\n"),
    "alias-bomb-model": Case(AN, 2, ["model.yaml: d[", "aliases expand to more than 10,000"],
                             model=GOOD + BOMB),
    "alias-bomb-measured": Case(["hw", "show", "bomb"], 2,
                                ["bomb.yaml: measured.d[", "aliases expand"],
                                user={"bomb.yaml": entry("bomb", extra="measured:\n" + "".join(
                                    "  " + line + "\n" for line in BOMB.splitlines()))}),
    "anchor-reused-layer": Case(AN, 0, model="batch: 8\ndtype: fp16\nlayers:\n"
                                "  - &l {type: linear, in: 8, out: 8}\n  - *l\n"),
    # numbers
    "width-5000-digits": Case(AN, 2, ["model.yaml: mlp[1]: an integer of 5,000 digits is out "
                                      "of range"], model=GOOD.replace("[8, 16, 8]", f"[8, {'9' * 5000}, 8]")),
    "width-10**400": Case(AN, 2, ["model.yaml: layers[0].in: an integer of 401 digits is out "
                                  "of range"], model=LAYER % ("1" + "0" * 400)),
    "width-above-2**40": Case(AN, 2, ["model.yaml: layers[0].in: an integer of 22 digits is out "
                                      "of range (at most 2**40"], model=LAYER % (10**21)),
    "width-2**40+1": Case(AN, 2, ["layers[0].in: 1099511627777 is out of range"],
                          model=LAYER % (2**40 + 1)),
    "batch-2**40-is-legal": Case(AN, 0, model=GOOD.replace("batch: 8", f"batch: {2**40}")),
    "batch-option-too-big": Case(AN + ["--batch", str(2**40 + 1)], 2, model=GOOD, usage=True),
    "batch-1e400": Case(AN, 2, ["model.yaml: batch: expected a positive integer, got inf"],
                        model=GOOD.replace("batch: 8", "batch: 1.0e+400")),
    "width-bool": Case(AN, 2, ["layers[0].in: expected a positive integer, got True"],
                       model=LAYER % "true"),
    "width-float-1e3": Case(AN, 2, ["layers[0].in: expected a positive integer, got 1000.0"],
                            model=LAYER % "1.0e+3"),
    "width-negative-zero": Case(AN, 2, ["layers[0].in: expected a positive integer, got 0"],
                                model=LAYER % "-0"),
    "width-hex-is-legal": Case(AN, 0, model=LAYER % "0x08"),
    "width-binary-tag": Case(AN, 2, ["layers[0].in: expected a positive integer, got a bytes"],
                             model=LAYER % "!!binary AAAA"),
    "mlp-float-width": Case(AN, 2, ["mlp[1]: expected a positive integer, got 8.0"],
                            model=GOOD.replace("[8, 16, 8]", "[8, 8.0, 8]")),
    # keys
    "duplicate-batch": Case(AN, 2, ["model.yaml: batch: duplicate key 'batch'"],
                            model="batch: 8\n" + GOOD),
    "duplicate-in": Case(AN, 2, ["model.yaml: layers[0].in: duplicate key 'in'"],
                         model=LAYER.replace("out: 8", "out: 8, in: 16") % 8),
    "duplicate-layers": Case(AN, 2, ["model.yaml: layers: duplicate key 'layers'"],
                             model=(LAYER % 8) + "layers: []\n"),
    "duplicate-in-hw-entry": Case(["hw", "show", "dup"], 2, ["dup.yaml: bandwidth_gbs: duplicate"],
                                  user={"dup.yaml": entry("dup", extra="bandwidth_gbs: 1.0\n")}),
    "newline-in-key": Case(AN, 2, ['model.yaml: na\\nme: unknown field'],
                           model=GOOD + '"na\\nme": 1\n'),
    "escape-in-key": Case(AN, 2, ['model.yaml: a\\x1b[31mb: unknown field'],
                          model=GOOD + '"a\\e[31mb": 1\n'),
    "newline-in-file-name": Case(["analyze", "{tmp}/bad\nname.yaml", "--hw", "a100"], 2,
                                 ["bad\\nname.yaml: cannot read file"]),
    "unhashable-key": Case(AN, 2, ["model.yaml: invalid YAML", "unhashable key"],
                           model=GOOD + "{a: 1}: 2\n"),
    # text encodings and syntax
    "bom": Case(AN, 0, model="\ufeff" + GOOD),
    "crlf": Case(AN, 0, model=GOOD.replace("\n", "\r\n")),
    "tab-indent": Case(AN, 2, ["model.yaml: invalid YAML: line 4"],
                       model="batch: 8\ndtype: fp16\nlayers:\n\t- {type: linear, in: 8, out: 8}\n"),
    "binary-junk": Case(AN, 2, ["model.yaml: cannot read file: not UTF-8"],
                        model=b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe"),
    "nul-character": Case(AN, 2, ["model.yaml: invalid YAML"], model=GOOD + "name: a\x00b\n"),
    "python-tag": Case(AN, 2, ["model.yaml: invalid YAML"],
                       model="!!python/object/apply:os.system ['echo hacked']\n"),
    "only-a-comment": Case(AN, 2, ["model.yaml: file is empty"], model="# nothing\n"),
    "top-level-scalar": Case(AN, 2, ["model.yaml: expected a mapping, got 'hello'"],
                             model="hello\n"),
    # structure
    "empty-layers": Case(AN, 2, ["model.yaml: layers: expected at least one layer"],
                         model="batch: 8\ndtype: fp16\nlayers: []\n"),
    "null-layer": Case(AN, 2, ["model.yaml: layers[0]: expected a mapping, got nothing"],
                       model="batch: 8\ndtype: fp16\nlayers: [null]\n"),
    "dtype-list": Case(AN, 2, ["model.yaml: dtype: expected a non-empty string"],
                       model=GOOD.replace("fp16", "[fp16]")),
    "mode-null": Case(AN, 2, ["model.yaml: mode: expected a non-empty string, got nothing"],
                      model=GOOD + "mode:\n"),
    "widths-do-not-fit": Case(AN, 2, ["model.yaml: layers[1].in: layer 'fc2' takes 32 inputs but "
                                      "the previous layer 'fc1' (layers[0]) gives 16 outputs"],
                              model="batch: 8\ndtype: fp16\nlayers:\n"
                              "  - {type: linear, in: 8, out: 16}\n"
                              "  - {type: linear, in: 32, out: 8}\n"),
    "no-batch-with-option": Case(AN + ["--batch", "4"], 0, model="dtype: fp16\nmlp: [8, 8]\n"),
    "no-batch-anywhere": Case(AN, 2, ["model.yaml: batch: missing required field"],
                              model="dtype: fp16\nmlp: [8, 8]\n"),
    "long-name": Case(AN + ["--format", "csv"], 0, model=GOOD + "name: " + "n" * 100_000 + "\n"),
    "unicode-name": Case(AN, 0, model=GOOD + "name: Modèle-模型-🚀\n"),
    "date-name": Case(AN + ["--format", "json"], 0, model=GOOD + "name: 2024-01-01\n"),
    # hardware entries
    "peak-1e308": Case(["hw", "show", "huge"], 2, ["huge.yaml: peak_tflops.fp16: 1e+308 TFLOP/s "
                                                   "is implausible"],
                       user={"huge.yaml": entry("huge", {"peak_tflops":
                                                         "peak_tflops: {fp16: 1.0e+308}"})}),
    "bandwidth-1e-320": Case(["hw", "show", "slow", "--format", "json"], 2,
                             ["slow.yaml: bandwidth_gbs:", "is implausible"],
                             user={"slow.yaml": entry("slow", {"bandwidth_gbs":
                                                               "bandwidth_gbs: 1.0e-320"})}),
    "measured-inf": Case(["hw", "show", "inf"], 2, ["inf.yaml: measured.x: expected a finite"],
                         user={"inf.yaml": entry("inf", extra="measured: {x: .inf}\n")}),
    "measured-date-json": Case(["hw", "show", "dated", "--format", "json"], 0,
                               user={"dated.yaml": entry("dated", extra="measured: "
                                                                        "{date: 2024-05-01}\n")}),
    "broken-user-entry-skipped": Case(AN, 0, model=GOOD, user={"bad.yaml": "name: [\n"},
                                      warns=["bad.yaml: invalid YAML: line 2", "entry skipped"]),
    "broken-user-entry-asked": Case(["analyze", "{model}", "--hw", "bad"], 2,
                                    ["bad.yaml: invalid YAML"], model=GOOD,
                                    user={"bad.yaml": "name: [\n"}),
    "user-entry-wrong-stem": Case(["hw", "list"], 0, user={"two.yaml": entry("one")},
                                  warns=["two.yaml: name: must equal the file name stem 'two'"]),
    "hwdb-is-a-file": Case(AN, 0, model=GOOD, env={"ROOFLINE_HWDB": "{model}"},
                           warns=["model.yaml: not a directory"]),
    # probe --save: refused before any probing
    "save-empty-name": Case(["probe", "--save", ""], 2, ["entry names use lowercase letters"]),
    "save-300-chars": Case(["probe", "--save", "a" * 300], 2,
                           ["entry names have at most 64 characters, got 300"]),
    "save-with-suffix": Case(["probe", "--save", "mybox.yaml"], 2,
                             ["--save mybox (got 'mybox.yaml')"]),
    "save-bundled-alias": Case(["probe", "--save", "a100"], 2,
                               ["'a100' is an alias of bundled a100-sxm4-80gb", "--force"]),
    "save-bundled-name": Case(["probe", "--save", "t4"], 2, ["'t4' is a bundled entry"]),
    "save-path-name": Case(["probe", "--save", "../evil"], 2, ["entry names use lowercase"]),
    "save-hwdb-is-a-file": Case(["probe", "--save", "x"], 2, ["is not a directory"],
                                model=GOOD, env={"ROOFLINE_HWDB": "{model}"}),
}

# issue 25, classes 3-5: repeats kept as runs and capped, models that do not fit, decode where
# it means nothing
LINEAR_REPEAT = "batch: 8\ndtype: fp16\nlayers:\n  - {type: linear, in: 8, out: 8, repeat: %d}\n"
LLAMA_LAYERS = ('{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, '
                '"intermediate_size": 128, "vocab_size": 100, "num_hidden_layers": %d}')
CONV = ("batch: 2\ndtype: fp16\ninput: {channels: 3, height: 8, width: 8}\nlayers:\n"
        "  - {type: conv2d, in_channels: %d, out_channels: 8, kernel: 3}\n")
CASES |= {
    "repeat-10**9": Case(AN, 2, ["model.yaml: layers[0].repeat: the model expands to "
                                 "1,000,000,000 layers", "at most 1,048,576"],
                         model=LINEAR_REPEAT % 10**9),
    "config-10**12-layers": Case(AN + ["--batch", "1", "--seq", "8", "--dtype", "fp16"], 2,
                                 ["model.yaml: layers[1].repeat:", "at most 1,048,576"],
                                 model=LLAMA_LAYERS % 10**12),
    "repeat-10**6-table": Case(AN, 0, model=LINEAR_REPEAT % 10**6),
    # 10**6 copies train with 3 x 10**6 - 1 GEMMs: JSON and --expand list each one, capped
    "repeat-10**6-json": Case(AN + ["--format", "json"], 2,
                              ["2,999,999 GEMMs and ops", "--format json lists each one",
                               "capped at 2,097,152 rows"], model=LINEAR_REPEAT % 10**6),
    "repeat-10**6-expand": Case(AN + ["--expand"], 2, ["--expand lists each one"],
                                model=LINEAR_REPEAT % 10**6),
    "repeat-10**6-compare": Case(["compare", "{model}", "--hw", "a100", "--hw", "h100"], 2,
                                 ["2,999,999 GEMMs and ops; compare reads each one and is "
                                  "capped at 2,097,152"], model=LINEAR_REPEAT % 10**6),
    "repeat-10**6-sweep": Case(["sweep", "{model}", "--hw", "a100", "--batch", "1..4"], 2,
                               ["sweep reads each one and is capped at 2,097,152"],
                               model=LINEAR_REPEAT % 10**6),
    "repeat-not-chaining": Case(AN, 2, ["model.yaml: layers[0].repeat: 'fc1' takes 64 but "
                                        "gives 32: its copies cannot follow each other"],
                                model=LINEAR_REPEAT.replace("in: 8, out: 8", "in: 64, out: 32")
                                % 3),
    "conv-channels-miss-input": Case(AN, 2, ["model.yaml: layers[0].in_channels: layer "
                                             "'conv1' takes 4 channels but the input gives 3"],
                                     model=CONV % 4),
    "conv-channels-fit-input": Case(AN, 0, model=CONV % 3),
    "decode-in-training": Case(AN, 2, ["model.yaml: phase: decode is an inference phase but "
                                       "the model trains", "--mode inference"],
                               model=GOOD + "phase: decode\n"),
    "decode-option-in-training": Case(AN + ["--phase", "decode"], 2,
                                      ["model.yaml: phase: decode is an inference phase"],
                                      model=GOOD),
    "decode-on-a-cnn": Case(AN + ["--mode", "inference"], 2,
                            ["model.yaml: phase: decode reads a KV cache", "no transformer"],
                            model=CONV % 3 + "phase: decode\n"),
    "generate-on-an-mlp": Case(AN + ["--prompt", "8", "--generate", "4"], 2,
                               ["model.yaml: generate: a generation decodes against the KV "
                                "cache", "no transformer block"], model=GOOD),
}


def _prepare(name: str, case: Case, root: Path) -> tuple[list[str], dict[str, str]]:
    tmp = root / name
    hwdb = tmp / "hwdb"
    hwdb.mkdir(parents=True)
    (tmp / "home").mkdir()
    model = tmp / "model.yaml"
    if case.model is not None:
        data = case.model if isinstance(case.model, bytes) else case.model.encode()
        model.write_bytes(data)
    for file, text in case.user.items():
        (hwdb / file).write_text(text)
    if case.fifo:
        os.mkfifo(tmp / case.fifo)
    fill = {"{model}": str(model), "{hwdb}": str(hwdb), "{tmp}": str(tmp)}

    def filled(text: str) -> str:
        for key, value in fill.items():
            text = text.replace(key, value)
        return text

    env = dict(os.environ, HOME=str(tmp / "home"), ROOFLINE_HWDB=str(hwdb),
               XDG_DATA_HOME=str(tmp / "home" / "data"))
    env.update({k: filled(v) for k, v in case.env.items()})
    return [str(ROOFLINE)] + [filled(a) for a in case.args], env


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess | str:
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "timed out (a hang)"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    if not ROOFLINE.exists():
        pytest.skip(f"the console script {ROOFLINE} is not installed (pip install -e .)")
    root = tmp_path_factory.mktemp("hostile")
    prepared = {name: _prepare(name, case, root) for name, case in CASES.items()}
    with ThreadPoolExecutor(max_workers=max(2, (os.cpu_count() or 2) * 2)) as pool:
        futures = {name: pool.submit(_run, *args) for name, args in prepared.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input(results, name):
    case, result = CASES[name], results[name]
    assert not isinstance(result, str), result
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == case.code, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    if case.code == 2 and not case.usage:
        assert len(lines) == 1, result.stderr[-2000:]
        assert lines[0].startswith("Error: ")
        for expected in case.names:
            assert expected in lines[0], lines[0][:500]
    elif case.code == 0:
        warnings = [line for line in lines if line.startswith("Warning: ")]
        assert len(warnings) == (1 if case.warns else 0), result.stderr[-2000:]
        for expected in case.warns:
            assert expected in warnings[0]


def test_click_usage_errors_keep_their_shape(results):
    """--batch beyond 2**40 is click's own range error (Usage / Try / Error), exit 2."""
    result = results["batch-option-too-big"]
    assert result.returncode == 2
    assert "Invalid value for '--batch'" in result.stderr
