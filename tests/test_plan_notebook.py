"""A Plan in Jupyter and at a REPL: one line as its repr, the shell's table as its HTML, the
chart from ``.plot()``; as a Report, a Comparison and a Sweep are."""

from __future__ import annotations

import re
from html import escape

import pytest

from roofline import plan

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


def test_html_is_the_pages_block(planned):
    """Jupyter shows the block of ``plan --format html``'s page (until 0.9.0 the shell's table
    in a <pre>): its chart, the layouts' sortable tables, the front and the best layout, with
    its own stylesheet and script and ids of its own."""
    from roofline.output.html import plan_page

    html, again = planned._repr_html_(), planned._repr_html_()
    assert html.startswith("<div><style>") and html.count("<script>") == 1
    assert '<div class="rl">' in html and "<!DOCTYPE" not in html
    page = plan_page(planned)
    for piece in ("<h3>Step time against GPUs</h3>", "<h3>Pareto front</h3>",
                  'class="sortable"', 'class="pt front-pt"'):
        assert piece.replace("h3>", "h2>") in page and piece in html
    first = {row for row in re.findall(r' id="([^"]+)"', html)}
    assert first and not first & set(re.findall(r' id="([^"]+)"', again))
    assert escape(planned.best.layout.label) in html


def test_plot_draws_the_front(planned):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = planned.plot()
    assert ax.get_xlabel() == "GPUs"
    assert [line.get_gid() for line in ax.get_lines()][:1] == ["plan-front"]
