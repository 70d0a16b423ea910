"""The HTML table Jupyter shows for a Report (``Report._repr_html_``)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from roofline import analyze_model

MLP = Path(__file__).resolve().parents[1] / "examples" / "mlp-1024-4096-1000.yaml"
VOID = {"br"}


class _Check(HTMLParser):
    """Records rows and cells, and fails on an unbalanced tag."""

    def __init__(self):
        super().__init__()
        self.stack, self.rows, self.cell_styles = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        self.stack.append(tag)
        if tag == "tr":
            self.rows.append((dict(attrs).get("style") or "", []))
        if tag in ("td", "th"):
            self.cell_styles.append(dict(attrs).get("style") or "")

    def handle_endtag(self, tag):
        assert self.stack and self.stack.pop() == tag, f"unbalanced </{tag}>"

    def handle_data(self, data):
        if self.stack and self.stack[-1] in ("td", "th"):
            self.rows[-1][1].append(data)


def _parse(report):
    check = _Check()
    check.feed(report._repr_html_())
    check.close()
    assert check.stack == []
    return check


def test_html_table_has_a_row_per_gemm_and_shades_memory_bound_rows():
    # batch 100: every GEMM of the MLP is memory-bound on an A100 (about 89 FLOP/B < 153)
    check = _parse(analyze_model(MLP, "a100-sxm4-80gb", batch=100))
    header, *rows = check.rows
    assert header[1][:3] == ["GEMM", "layer", "pass"]
    assert [cells[0] for _, cells in rows] == ["MM1", "MM2", "MM3", "MM4", "MM5"]
    assert all("background" in style and "color:#000" in style for style, _ in rows)
    assert "shaded rows: memory-bound" in analyze_model(MLP, "a100", batch=100)._repr_html_()


def test_html_numbers_right_aligned_and_compute_rows_plain():
    report = analyze_model(MLP, "a100-sxm4-80gb")  # batch 512: all compute-bound
    check = _parse(report)
    assert all(style == "" for style, _ in check.rows)
    columns = 13
    first_row = check.cell_styles[columns:2 * columns]
    assert first_row[0] == "text-align:left"       # GEMM name
    assert first_row[3] == "text-align:right"      # M
    assert first_row[8] == "text-align:right"      # FLOP/B
    assert "shaded rows" not in report._repr_html_()
