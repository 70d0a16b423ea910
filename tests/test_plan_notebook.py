"""A Plan in Jupyter and at a REPL: one line as its repr, the shell's table as its HTML, the
chart from ``.plot()``; as a Report, a Comparison and a Sweep are."""

from __future__ import annotations

from html import escape

import pytest

from roofline import plan
from roofline.output.plan import plan_table

MODEL = "examples/mlp-1024-4096-1000.yaml"


@pytest.fixture(scope="module")
def planned():
    return plan(MODEL, "h100", "1..4", batch=64)


def test_repr_is_one_line_naming_the_best(planned):
    """The dataclass's repr printed every layout and its reports (2.9 MB for Mistral-7B over
    8..64 GPUs); now one line, the best layout as the table's last line names it."""
    text = repr(planned)
    best = planned.best
    assert "\n" not in text and len(text) < 300
    assert text.startswith("<Plan mlp-1024-4096-1000 on h100-sxm5-80gb: 1, 2, 4 GPUs, ")
    assert f"best {best.layout.label} on " in text
    assert f"{len(planned.fitting)} fit" in text


def test_html_is_the_shells_table(planned):
    html = planned._repr_html_()
    assert html.startswith('<div class="roofline-plan"><pre')
    assert escape(plan_table(planned)) in html


def test_plot_draws_the_front(planned):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = planned.plot()
    assert ax.get_xlabel() == "GPUs"
    assert [line.get_gid() for line in ax.get_lines()][:1] == ["plan-front"]
