"""A sweep (and analyze, compare) of a factory that does what a tired or hostile user's does:
prints to stdout, parses the command line or calls ``sys.exit`` as it is imported, runs other
GEMMs at another batch. Each ends in one line, exit 2, or in a report that holds every point.
Needs torch (the `torch` extra)."""

from __future__ import annotations

import json
import math
import sys

import pytest
from _extras import need

need("torch", extra="torch")

import roofline  # noqa: E402
from roofline.errors import CaptureError  # noqa: E402

FACTORY = '''
import sys
import torch
print("importing: a line on stdout")
def loud(batch=8):
    print("making batch", batch)
    return torch.nn.Linear(64, 32, bias=False), torch.zeros(batch, 64)
class Chatty(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 32, bias=False)
    def forward(self, x):
        print("{ not json")
        return self.fc(x)
def chatty(batch=8):
    return Chatty(), torch.zeros(batch, 64)
def exits(batch=8):
    sys.exit(3)
def fewer(batch=8):
    # two Linear layers up to batch 8, the first alone beyond
    layers = [torch.nn.Linear(64, 256, bias=False), torch.nn.Linear(256, 32, bias=False)]
    return torch.nn.Sequential(*layers[:1 if batch > 8 else 2]), torch.zeros(batch, 64)
def more(batch=8):
    # one Linear layer up to batch 8, a second beyond
    layers = [torch.nn.Linear(64, 256, bias=False), torch.nn.Linear(256, 32, bias=False)]
    return torch.nn.Sequential(*layers[:2 if batch > 8 else 1]), torch.zeros(batch, 64)
'''

SCRIPT = '''
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()  # a training script's, at import
def make(batch=8):
    return torch.nn.Linear(64, 32, bias=False), torch.zeros(batch, 64)
'''

REQUIRED = '''
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
args = parser.parse_args()
def make(batch=8):
    pass
'''


@pytest.fixture
def factory(tmp_path, monkeypatch):
    """``hostile_example`` (the factories above), ``script_example`` (a script whose import
    parses its command line, defaults only) and ``required_example`` (one that needs an
    option), importable."""
    (tmp_path / "hostile_example.py").write_text(FACTORY)
    (tmp_path / "script_example.py").write_text(SCRIPT)
    (tmp_path / "required_example.py").write_text(REQUIRED)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("hostile_example", "script_example", "required_example"):  # from this path
        monkeypatch.delitem(sys.modules, name, raising=False)
    return "hostile_example"


def _linear_time(b: int) -> float:
    """Linear 64 -> 32 (no bias), fp32 inference, batch b, on an H100 (3350 GB/s,
    hwdb/gpu/h100-sxm5-80gb.yaml): 2 x b x 32 x 64 = 4,096 b FLOPs over 4 (64 b + 64 x 32 +
    32 b) = 384 b + 8,192 B; its intensity is below 4,096 / 384 = 10.7 < the ridge 20.0 at
    every batch, so memory-bound: the step's roofline time is its bytes over 3.35 TB/s."""
    return (384 * b + 8192) / 3350e9


@pytest.mark.parametrize("name", ["loud", "chatty"])
def test_what_a_factory_prints_stays_off_the_report(invoke, factory, name):
    """The module's import, the factory and the module's forward print to stdout: it went into
    the report, so ``--format json`` was no JSON (``importing: a line on stdout`` before the
    ``{``); now it is on stderr, and the JSON holds the hand values."""
    result = invoke("sweep", f"{factory}:{name}", "--hw", "h100", "--batch", "1,8", "--mode",
                    "inference", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p["time_s"] for p in data["points"]] == pytest.approx(
        [_linear_time(1), _linear_time(8)])
    assert ("making batch 8" if name == "loud" else "{ not json") in result.stderr
    for command in (["analyze", f"{factory}:{name}", "--hw", "h100"],
                    ["compare", f"{factory}:{name}", "--hw", "h100", "--hw", "a100"]):
        result = invoke(*command, "--batch", "8", "--mode", "inference", "--format", "json")
        assert result.exit_code == 0, result.output
        json.loads(result.stdout)


def test_a_script_that_parses_its_command_line_is_captured(invoke, factory):
    """Its ``parse_args()`` read roofline's own options ("unrecognized arguments: sweep ...",
    argparse's exit 2 and no line of ours); it now reads ``[spec]``: its defaults."""
    result = invoke("sweep", "script_example:make", "--hw", "h100", "--batch", "1,8", "--mode",
                    "inference", "--format", "json")
    assert result.exit_code == 0, result.output
    assert [p["time_s"] for p in json.loads(result.stdout)["points"]] == pytest.approx(
        [_linear_time(1), _linear_time(8)])


def test_a_sys_exit_in_the_users_code_is_one_line(invoke, factory, tmp_path):
    """``sys.exit(3)`` in the factory ended roofline with status 3 and not a word; an import
    that needs an option argparse was not given, with argparse's usage only."""
    result = invoke("sweep", f"{factory}:exits", "--hw", "h100", "--batch", "1,8")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: {factory}:exits: at batch 1: the factory called sys.exit(3) "
        f"({tmp_path / 'hostile_example.py'}, line 18): a script that exits or parses its "
        f"command line as it runs cannot give a module; keep that under `if __name__ == "
        f"'__main__':`")
    result = invoke("analyze", "required_example:make", "--hw", "h100")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: required_example:make: importing required_example called sys.exit(2) "
        f"({tmp_path / 'required_example.py'}, line 5): a script that exits or parses its "
        f"command line as it runs cannot give a module; keep that under `if __name__ == "
        f"'__main__':`")
    with pytest.raises(CaptureError, match=r"the factory called sys.exit\(3\)"):
        roofline.sweep(f"{factory}:exits", "h100", batches=[1, 8])


def test_a_sys_exit_beside_rooflines_folder_is_named_as_the_users():
    """Where a ``sys.exit`` was called is the outermost frame outside roofline's own folder and
    importlib's: a file in a folder whose name only begins like roofline's (``roofline_ext``
    beside ``src/roofline``) is the user's, and was skipped as roofline's by a bare prefix."""
    import os

    from roofline.model import capture_factory

    here = os.path.dirname(os.path.dirname(capture_factory.__file__))
    path = here + "_ext" + os.sep + "train.py"
    try:
        exec(compile("\n\nraise SystemExit(4)", path, "exec"))
    except SystemExit as exc:  # this test's own frame left out: the exit's file alone
        said = capture_factory._exited(exc.with_traceback(exc.__traceback__.tb_next))
    assert said.startswith(f"called sys.exit(4) ({path}, line 3): ")


def _intensity(b: int, n: int, k: int) -> float:
    """A Linear k -> n (no bias) in fp32 at batch b: 2 b n k FLOPs over 4 (b k + k n + b n)
    bytes."""
    return 2 * b * n * k / (4 * (b * k + k * n + b * n))


@pytest.mark.parametrize("name", ["fewer", "more"])
def test_a_sweep_chart_follows_each_gemm_by_name(factory, name, tmp_path):
    """A module that runs another GEMM beyond batch 8: the chart matched GEMMs by place, so
    ``fewer`` (MM2 gone at 16, 32) was an IndexError and ``more`` drew no MM2 (the GEMMs
    of batch 4 only, where MM2 ran at 16 and 32), unsaid. Each GEMM is now its own curve where it ran,
    a gap elsewhere: MM1 (64 -> 256) at 4, 8, 16, 32: 32,768 b / (1,280 b + 65,536), 1.855,
    3.459, 6.095, 9.846; MM2 (256 -> 32) 16,384 b / (1,152 b + 32,768), 1.753 and 3.122 at 4
    and 8 (``fewer``), 5.120 and 7.529 at 16 and 32 (``more``)."""
    from roofline.plot.data import sweep_series

    sweep = roofline.sweep(f"{factory}:{name}", "h100", batches=[4, 8, 16, 32], mode="inference")
    series = {curve.names[0]: ys for curve, ys in sweep_series(sweep.reports, "intensity")}
    assert series["MM1"] == pytest.approx([_intensity(b, 256, 64) for b in (4, 8, 16, 32)])
    assert [round(_intensity(b, 256, 64), 3) for b in (4, 8, 16, 32)] == [
        1.855, 3.459, 6.095, 9.846]
    mm2 = [_intensity(b, 32, 256) for b in (4, 8, 16, 32)]
    expected = mm2[:2] + [None, None] if name == "fewer" else [None, None] + mm2[2:]
    assert [None if y is None else pytest.approx(y) for y in series["MM2"]] == expected
    from roofline.plot import save_chart

    save_chart(sweep.plot(), tmp_path / f"{name}.png")  # an IndexError for fewer
    assert (tmp_path / f"{name}.png").stat().st_size > 0
    assert all(not math.isnan(y) for ys in series.values() for y in ys if y is not None)


def test_the_html_caption_says_batches_and_the_unknown(factory):
    """``more`` at batches 4, 8, 16, 32: MM1 (64 -> 256, intensity 9.85 at 32 < the ridge 20)
    turns compute-bound at 183 (7,168 b >= 1,310,720: hand), past the swept ones; MM2 ran at 16
    and 32 only, unknown. The caption read "within the swept batchs" and nothing of MM2."""
    from roofline.output.html.whatif import sweep_fragment

    sweep = roofline.sweep(f"{factory}:more", "h100", batches=[4, 8, 16, 32], mode="inference")
    assert sweep.transitions() == {"MM1": 183, "MM2": None}
    assert ("No GEMM turns compute-bound within the swept batches that the captures tell (the "
            "list below says where each does, if any does, and why the others are unknown)."
            ) in sweep_fragment(sweep)
