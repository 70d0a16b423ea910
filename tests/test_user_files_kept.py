"""A chart never replaces a user's file unasked: ``--plot FILE`` on an existing file stops
before any work, the file as it was, unless ``--force``; the library's ``save_plot`` and
``save_chart`` likewise unless ``force=True``. And the bad paths and objects a user can give
are one line each."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline import analyze_model  # noqa: E402
from roofline.errors import PlotError  # noqa: E402
from roofline.plot import check_plot_path, save_chart, save_plot  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
KEPT = b"a user's own file"


@pytest.mark.parametrize("args", [
    ("analyze", MLP, "--hw", "a100"),
    ("gemm", "64", "64", "64", "--hw", "a100"),
    ("compare", MLP, "--hw", "a100", "--hw", "v100"),
    ("sweep", MLP, "--hw", "a100", "--batch", "1,64"),
    ("plan", MLP, "--hw", "h100", "--gpus", "1"),
])
def test_every_plot_option_keeps_an_existing_file_without_force(invoke, tmp_path, args):
    path = tmp_path / "mine.png"
    path.write_bytes(KEPT)
    result = invoke(*args, "--plot", path)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path} exists; give --force to replace it\n"
    assert result.stdout == ""  # before any work
    assert path.read_bytes() == KEPT
    result = invoke(*args, "--plot", path, "--force")
    assert result.exit_code == 0, result.output
    assert path.read_bytes().startswith(b"\x89PNG")


def test_the_library_keeps_an_existing_file_without_force(tmp_path):
    report = analyze_model(MLP, "a100")
    path = tmp_path / "mine.svg"
    path.write_bytes(KEPT)
    with pytest.raises(PlotError, match=r"exists; give force=True to replace it"):
        save_plot(report, path)
    with pytest.raises(PlotError, match=r"exists; give force=True to replace it"):
        save_chart(report.plot(), path)
    assert path.read_bytes() == KEPT
    assert save_plot(report, path, force=True) == path
    assert path.read_bytes().startswith(b"<?xml")


def test_save_plot_of_something_else_names_what_draws_it(tmp_path):
    from roofline.analysis.whatif import compare

    result = compare(MLP, ["a100", "v100"])
    with pytest.raises(PlotError, match=r"save_plot draws a Report or a list of them, got "
                                        r"Comparison; .*save_chart\(result.plot\(\), path\)"):
        save_plot(result, tmp_path / "c.png")
    with pytest.raises(PlotError, match=r"save_chart writes a chart's Axes, got Comparison"):
        save_chart(result, tmp_path / "c.png")
    assert save_chart(result.plot(), tmp_path / "c.png").exists()


def test_a_plot_path_that_is_no_file_or_under_a_file_is_one_line(invoke, tmp_path):
    # an empty path is said to be empty (click's Path type read it as '.', and so did this)
    for command in (["analyze", MLP], ["gemm", "8", "8", "8"]):
        result = invoke(*command, "--hw", "a100", "--plot", "")
        assert result.exit_code == 2
        assert result.stderr == ("Error: the plot path is empty: give a file name ending in "
                                 ".png, .svg or .pdf\n")
    with pytest.raises(PlotError, match=r"^'\.' is no file name: give one ending in \.png"):
        check_plot_path(".")  # the library's caller wrote '.' itself
    with pytest.raises(PlotError, match=r"^the plot path is empty"):
        check_plot_path("")
    plain = tmp_path / "plain"
    plain.write_text("x")
    result = invoke("analyze", MLP, "--hw", "a100", "--plot", plain / "x.png")
    assert result.exit_code == 2
    assert result.stderr == (f"Error: {plain / 'x.png'}: cannot write the plot: {plain} is not "
                             f"a directory\n")


def test_probe_force_without_save_is_refused_before_probing(invoke, monkeypatch):
    from roofline import probe

    monkeypatch.setattr(probe, "run_probe", lambda **kw: pytest.fail("the probe ran"))
    result = invoke("probe", "--force")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --force: goes with --save")
