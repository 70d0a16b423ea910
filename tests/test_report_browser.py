"""The HTML report in a real browser: Debian's headless Chromium driven by Playwright (never a
browser downloaded at run time; .ci/run installs the Debian package when it is missing).

The page loads without a console error and without asking the network for anything; sorting a
column reorders the rows; hovering a point shows its tooltip; the SVG has one point per GEMM and
op; a click on a point finds its row; the filters, the keyboard and the print stylesheet work;
two Jupyter blocks on one page work apart. Group ``browser`` (left out of the default run;
``pytest -m browser`` or ``pytest -m ""`` runs it). Under CI (``CI=true``) a missing browser
fails these tests; elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from roofline import analyze_model, compare, plan, sweep
from roofline.output.html import comparison_page, plan_page, report_page, sweep_page
from roofline.units import seconds

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
RESNET = ROOT / "examples" / "resnet50.yaml"
LLAMA = ROOT / "examples" / "hf" / "llama-2-7b.json"
MISTRAL = ROOT / "examples" / "hf" / "mistral-7b.json"
MIXTRAL = ROOT / "examples" / "hf" / "mixtral-8x7b.json"
#: Debian's chromium package; ROOFLINE_CHROMIUM names another binary.
CHROMIUM = os.environ.get("ROOFLINE_CHROMIUM", "/usr/bin/chromium")


def _unavailable(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install '.[test]')")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _unavailable(f"no browser at {CHROMIUM} (apt-get install chromium)")
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield chromium
        chromium.close()


class Opened:
    """A page opened from a file, with what it logged and what it asked the network for."""

    def __init__(self, browser, path: Path):
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error"
                     else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")

    def column(self, table: str, index: int) -> list[str]:
        """The sort keys (``data-v``, else the text) of one column, in the order shown."""
        return self.page.eval_on_selector_all(
            f"{table} tbody tr", "(rows, i) => rows.map(r => r.cells[i].dataset.v ?? "
                                 "r.cells[i].textContent.trim())", index)

    def hover(self, selector: str) -> tuple[float, float]:
        """Move the mouse to the middle of the first element ``selector`` finds, as a person
        would (a point drawn over it, a coincident GEMM, gets the event), and say where."""
        self.page.locator(selector).first.scroll_into_view_if_needed()
        box = self.page.locator(selector).first.bounding_box()
        assert box is not None, selector
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        self.page.mouse.move(x, y)
        return x, y

    def close(self):
        self.page.close()


@pytest.fixture
def open_page(browser, tmp_path):
    opened = []

    def open_(text: str, name: str = "page.html") -> Opened:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        opened.append(Opened(browser, path))
        return opened[-1]

    yield open_
    for page in opened:
        page.close()


@pytest.fixture(scope="module")
def resnet():
    return analyze_model(RESNET, "a100-sxm4-80gb")


def test_loads_without_errors_and_fetches_nothing(open_page, resnet):
    opened = open_page(report_page([resnet], command="roofline analyze resnet50.yaml"))
    assert opened.errors == []
    page_url = opened.page.url
    assert [url for url in opened.requests if url != page_url] == []
    assert opened.page.locator("main.rl[data-ready]").count() == 1  # the script ran


def test_the_svg_has_one_point_per_gemm_and_op(open_page, resnet):
    opened = open_page(report_page([resnet]))
    # ResNet-50 trains with 161 GEMMs and 243 other ops, every one with FLOPs
    assert len(resnet.results) == 161 and len(resnet.ops) == 243
    assert opened.page.locator("svg .pt").count() == 161 + 243
    assert opened.page.locator("svg .pt.op").count() == 243
    assert opened.page.locator("tbody tr[id]").count() == 161 + 243


def test_sorting_a_column_reorders_the_rows(open_page, resnet):
    opened = open_page(report_page([resnet]))
    index = 9  # FLOP/B
    before = [float(v) for v in opened.column("table.sortable.filterable", index)]
    assert before != sorted(before)
    header = opened.page.locator("table.filterable th", has_text="FLOP/B")
    header.locator("button").click()
    after = [float(v) for v in opened.column("table.sortable.filterable", index)]
    assert after == sorted(before)
    assert header.get_attribute("aria-sort") == "ascending"
    header.locator("button").click()
    assert [float(v) for v in opened.column("table.sortable.filterable", index)] == sorted(
        before, reverse=True)
    # a text column sorts in natural order: MM2 before MM10
    opened.page.locator("table.filterable th", has_text="name").locator("button").click()
    names = opened.column("table.sortable.filterable", 0)
    assert names[:3] == ["MM1", "MM2", "MM3"] and names.index("MM9") < names.index("MM10")


def test_hovering_a_point_shows_its_tooltip(open_page):
    opened = open_page(report_page([analyze_model(MLP, "a100-sxm4-80gb")]))
    tip = opened.page.locator(".rl .tip")
    assert tip.is_hidden()
    opened.hover('svg .pt[data-r="r0-MM3"]')
    assert tip.is_visible()
    text = tip.inner_text()
    # MM3 = dY . W2^T: M 512, N 4096, K 1000, fp16:
    # 2*512*4096*1000 / 2(512*1000 + 1000*4096 + 512*4096) = 4,194,304,000 / 13,410,304
    assert f"{4_194_304_000 / 13_410_304:.1f}" == "312.8"
    assert "MM3 \u00b7 fc2 \u00b7 backward-data" in text and "312.8 FLOP/B" in text
    assert "512 x 4096 x 1000" in text
    # the tooltip names the points drawn on or beside the one under the mouse, three at most
    # and a count: MM4 = H^T . dY (4096 x 1000 x 512) moves MM3's bytes for MM3's FLOPs, and
    # MM1 and MM5 (315.1 FLOP/B) sit a pixel away: four points, one of them counted
    assert text.count(" \u00b7 ") == 2 * 4 and text.endswith("+1 more at this point")
    opened.page.mouse.move(5, 5)
    assert tip.is_hidden()


def test_clicking_a_point_focuses_its_row(open_page, resnet):
    opened = open_page(report_page([resnet]))
    x, y = opened.hover('svg .pt[data-r="r0-MM1"]')
    # the point on top where the mouse is (MM1, or one drawn over it) heads the tooltip
    top = opened.page.evaluate("([x, y]) => document.elementFromPoint(x, y).dataset.r", [x, y])
    assert opened.page.inner_text(".rl .tip").startswith(top.removeprefix("r0-") + " \u00b7")
    assert "MM1 \u00b7 conv1 \u00b7 forward" in opened.page.inner_text(".rl .tip")
    opened.page.mouse.click(x, y)
    assert opened.page.evaluate("document.activeElement.id") == top
    row = opened.page.locator(f"#{top}")
    assert row.is_visible()
    box, view = row.bounding_box(), opened.page.viewport_size
    assert box is not None and 0 <= box["y"] <= view["height"]


def test_filters_hide_rows_and_dim_points(open_page, resnet):
    opened = open_page(report_page([resnet]))
    opened.page.select_option("select[name=bound]", "memory")
    bounds = opened.page.eval_on_selector_all(
        "tbody tr[id]:not([hidden])", "rows => rows.map(r => r.dataset.bound)")
    memory = sum(1 for r in (*resnet.results, *resnet.ops) if r.bound == "memory")
    assert bounds == ["memory"] * memory
    assert opened.page.locator("svg .pt.off").count() == 161 + 243 - memory
    opened.page.fill("input[name=layer]", "res5.3")
    shown = opened.page.eval_on_selector_all(
        "tbody tr[id]:not([hidden])", "rows => rows.map(r => r.dataset.layer)")
    assert shown and all(layer.startswith("res5.3") for layer in shown)
    assert f"{len(shown)} of 404 rows" in opened.page.inner_text(".controls .count")


def test_rows_take_the_keyboard_focus_and_light_their_point(open_page):
    opened = open_page(report_page([analyze_model(MLP, "a100-sxm4-80gb")]))
    opened.page.focus("#r0-MM2")
    assert opened.page.locator('svg .pt.hl[data-r="r0-MM2"]').count() == 1
    assert "MM2" in opened.page.inner_text(".rl .tip")
    opened.page.keyboard.press("Tab")  # rows are in the tab order
    assert opened.page.evaluate("document.activeElement.id") == "r0-MM3"


def test_the_print_stylesheet_hides_the_controls(open_page, resnet):
    opened = open_page(report_page([resnet]))
    assert opened.page.locator(".controls").is_visible()
    opened.page.emulate_media(media="print")
    assert opened.page.locator(".controls").is_hidden()


def _keys(opened, index: int) -> list[str]:
    """The sort keys of a column of the page's first table, in the order shown."""
    return opened.page.evaluate(
        "i => Array.from(document.querySelector('table.sortable').tBodies[0].rows, "
        "r => r.cells[i].dataset.v ?? r.cells[i].textContent.trim())", index)


def _sort(opened, head: str) -> None:
    opened.page.locator("table.sortable >> nth=0").locator(
        "th", has_text=head).first.locator("button").click()


def test_a_number_shown_with_a_unit_sorts_by_its_value(open_page):
    """Sweep's memory column crosses units (33.2 MB .. 6.45 GB): it sorts by bytes, not as
    text (which put 33.2 MB after 3.24 GB)."""
    result = sweep(MLP, "xeon-platinum-8480plus", "1..524288", dtype="bf16")
    held = [r.memory.total_bytes for r in result.reports]
    opened = open_page(sweep_page(result), "sweep.html")
    index = 5  # batch, step time, samples/s, predicted, predicted samples/s, memory
    for order in (sorted, lambda v: sorted(v, reverse=True)):
        _sort(opened, "memory")
        assert [float(v) for v in _keys(opened, index)] == order(
            held)
    assert opened.errors == []


def test_a_missing_number_sorts_last_both_ways_and_ties_keep_the_printed_order(open_page):
    """compare's predicted speedup is ``-`` for a device with no prediction: such a cell was
    compared as NaN, leaving rows where they were; it sorts last, ascending and descending,
    and a sort gives the same order whatever was sorted before."""
    result = compare(MLP, ["v100", "a100", "xeon-platinum-8480plus"], batch=64)
    speedups = [result.predicted_speedup(r) for r in result.reports]
    assert None in speedups and len([s for s in speedups if s is not None]) >= 2
    opened = open_page(comparison_page(result), "compare.html")
    index = 6  # hardware, dtype, ridge, step time, speedup, predicted, predicted speedup
    known = [s for s in speedups if s is not None]
    shown = []
    for _ in range(3):
        _sort(opened, "predicted speedup")
        keys = _keys(opened, index)
        shown.append(keys)
        assert keys[-1] == "-" and keys.count("-") == speedups.count(None)
    assert [float(v) for v in shown[0][:len(known)]] == sorted(known)
    assert [float(v) for v in shown[1][:len(known)]] == sorted(known, reverse=True)
    assert shown[2] == shown[0]
    # ties: the dtype column (fp16 on every GPU, another on the CPU) keeps the printed order
    _sort(opened, "fits")
    _sort(opened, "dtype")
    first = _keys(opened, 0)
    _sort(opened, "step time")
    _sort(opened, "dtype")
    _sort(opened, "dtype")
    _sort(opened, "dtype")
    assert _keys(opened, 0) == first
    assert opened.errors == []


#: each SVG text as drawn, in its chart's viewBox units, with why it is out of place: past the
#: viewBox, or across a dashed line (a ridge, a sweep's transition)
_MISPLACED_TEXT = """() => {
  const out = [];
  document.querySelectorAll(".rl svg").forEach(svg => {
    const box = svg.viewBox.baseVal, at = svg.getBoundingClientRect(), k = box.width / at.width;
    const lines = Array.from(svg.querySelectorAll("line.ridge, line.mark"), l => [
      l.x1.baseVal.value, Math.min(l.y1.baseVal.value, l.y2.baseVal.value),
      Math.max(l.y1.baseVal.value, l.y2.baseVal.value)]);
    svg.querySelectorAll("text").forEach(t => {
      const r = t.getBoundingClientRect();
      const x0 = (r.left - at.left) * k, x1 = (r.right - at.left) * k;
      const y0 = (r.top - at.top) * k, y1 = (r.bottom - at.top) * k;
      if (x0 < -0.5 || x1 > box.width + 0.5 || y0 < -0.5 || y1 > box.height + 0.5)
        out.push([t.textContent, "outside", Math.round(x0), Math.round(x1)]);
      lines.forEach(([x, top, bottom]) => {
        if (x > x0 + 1 && x < x1 - 1 && y1 > top && y0 < bottom)
          out.push([t.textContent, "crosses a line at", Math.round(x)]);
      });
    });
  });
  return out;
}"""


def test_chart_text_stays_inside_the_chart_and_off_its_lines(open_page):
    """llama decode on an H100: the ridge's label (295.4 FLOP/B, near the right edge) ran
    ~19 px past the SVG and the peak's was drawn across the ridge's dashed line; compare's
    bar label for xeon-platinum-8480plus started left of the SVG, and a long text at a bar's
    end ran past its right edge."""
    pages = [
        report_page([analyze_model(LLAMA, "h100", mode="inference", phase="decode", batch=8,
                                   seq=4096)]),
        comparison_page(compare(MLP, ["v100", "a100", "xeon-platinum-8480plus"], batch=64)),
        comparison_page(compare(LLAMA, ["v100", "a100", "h100", "xeon-platinum-8480plus"],
                                mode="inference", batch=8, seq=4096)),  # "..., does not fit"
        sweep_page(sweep(MLP, "a100", "1..512")),  # a transition near the right edge
        report_page([analyze_model(RESNET, "h100", mode="train")]),
        # five transitions within 12 px (batch 116-129) and a band past batch 227: the fifth
        # label was drawn over the first, and the ones turned left ran across the others' lines
        sweep_page(sweep(MISTRAL, "l4", "1..256", mode="inference", phase="decode",
                         seqs=1279, weights="int4", kv_cache="fp8")),
    ]
    for index, text in enumerate(pages):
        opened = open_page(text, f"chart{index}.html")
        assert opened.page.evaluate(_MISPLACED_TEXT) == [], index
        assert opened.page.evaluate(_OVERLAPPING_MARK_LABELS) == [], index
        assert opened.errors == []


#: pairs of a chart's transition labels whose drawn boxes overlap
_OVERLAPPING_MARK_LABELS = """() => {
  const out = [];
  document.querySelectorAll(".rl svg").forEach(svg => {
    const boxes = Array.from(svg.querySelectorAll("text.mark-label"),
                             t => [t.textContent, t.getBoundingClientRect()]);
    boxes.forEach(([a, r], i) => boxes.slice(i + 1).forEach(([b, q]) => {
      if (r.left < q.right - 0.5 && q.left < r.right - 0.5 && r.top < q.bottom - 0.5
          && q.top < r.bottom - 0.5) out.push([a, b]);
    }));
  });
  return out;
}"""


#: A4's printable width at 1 cm margins, 190 mm, in CSS pixels (96 to the inch)
A4_PRINTABLE_PX = round(190 / 25.4 * 96)


def test_wide_tables_print_whole_with_their_header_on_every_page(open_page):
    """A page printed to A4 keeps every column of its widest tables (analyze's 15, compare's
    per-device GEMM table, plan's layouts) inside the printable width, a header row Chromium repeats on every
    page it spans, the sort buttons laid out as text (a button is painted on a table's first
    page only). A table 983-1285 px wide, cells kept on one line, lost its right columns."""
    pages = [report_page([analyze_model(RESNET, "h100", mode="train")]),
             comparison_page(compare(RESNET, ["v100", "a100", "h100"])),
             plan_page(plan(MIXTRAL, "a100", "16..32", batch=64, seq=4096))]  # 18 columns
    for index, text in enumerate(pages):
        opened = open_page(text, f"print{index}.html")
        opened.page.set_viewport_size({"width": A4_PRINTABLE_PX, "height": 1000})
        opened.page.emulate_media(media="print")
        widths = opened.page.eval_on_selector_all(
            ".rl table", "ts => ts.map(t => t.getBoundingClientRect().right)")
        assert widths and max(widths) <= A4_PRINTABLE_PX + 0.5, widths
        heads = opened.page.eval_on_selector_all(
            ".rl table.sortable", "ts => ts.map(t => [getComputedStyle(t.tHead).display, "
            "getComputedStyle(t.tHead.querySelector('button')).display])")
        assert heads and set(map(tuple, heads)) == {("table-header-group", "contents")}


def test_compare_and_sweep_pages(open_page):
    result = compare(MLP, ["v100", "a100", "h100"])
    opened = open_page(comparison_page(result), "compare.html")
    assert opened.errors == []
    assert opened.page.locator("svg .pt").count() == 3 * 5
    opened.page.locator("table.sortable th", has_text="step time").first.locator(
        "button").click()
    times = [float(v) for v in opened.column("table.sortable >> nth=0", 3)]
    assert times == sorted(times)
    opened = open_page(sweep_page(sweep(MLP, "a100", "1..4096")), "sweep.html")
    assert opened.errors == []
    opened.hover("svg .pt")
    assert "batch 1\n" in opened.page.inner_text(".rl .tip")


def test_a_narrow_screen_keeps_chart_text_readable_and_charts_equal(open_page, resnet):
    """At a phone's 420 px the roofline drew 350 px wide, its 12 px text at 6 px: a chart now
    keeps 540 px (12 px text at 9 px or more) inside its own scrolled figure, the page itself
    no wider than the screen. compare's three device charts in a 1280 px window were two
    halves and one whole: now three equal columns' widths."""
    opened = open_page(report_page([resnet]), "narrow.html")
    opened.page.set_viewport_size({"width": 420, "height": 900})
    widths = opened.page.eval_on_selector_all("svg[role=img]", "s => s.map(e => "
                                              "e.getBoundingClientRect().width)")
    assert widths and min(widths) >= 540
    assert opened.page.evaluate("document.documentElement.scrollWidth") <= 420
    # compare's "why" list names runs of GEMMs with no space to wrap at (Mistral-7B on an L4
    # and an A10: "MM2,MM6,MM10,MM14,MM18,MM22,MM26,+25" in bold): the page was 441 px wide
    opened = open_page(comparison_page(compare(MISTRAL, ["l4", "a10"], batch=96, seq=1279,
                                               mode="inference", phase="decode",
                                               weights="int4", kv_cache="fp8")), "why.html")
    opened.page.set_viewport_size({"width": 420, "height": 900})
    assert opened.page.evaluate("document.documentElement.scrollWidth") <= 420
    opened = open_page(comparison_page(compare(MLP, ["v100", "a100", "h100"])), "wide.html")
    widths = opened.page.eval_on_selector_all(".charts figure", "f => f.map(e => "
                                              "Math.round(e.getBoundingClientRect().width))")
    assert len(widths) == 3 and len(set(widths)) == 1, widths


def test_two_jupyter_blocks_on_one_page_work_apart(open_page):
    first = analyze_model(MLP, "a100-sxm4-80gb")._repr_html_()
    second = analyze_model(MLP, "v100-sxm2-16gb", batch=8)._repr_html_()
    opened = open_page(f"<!DOCTYPE html><html><body>{first}{second}</body></html>")
    assert opened.errors == []
    assert opened.page.locator(".rl[data-ready]").count() == 2
    blocks = opened.page.locator("div.rl")
    opened.hover("div.rl >> nth=1 >> svg .pt")
    assert blocks.nth(1).locator(".tip").is_visible()
    assert blocks.nth(0).locator(".tip").is_hidden()
    assert "v100" not in blocks.nth(1).locator(".tip").inner_text()  # its own GEMM's text


def test_two_jupyter_compare_blocks_on_one_page_work_apart(open_page):
    """A Comparison shows in Jupyter as the compare page's block; two on one page keep their
    own ids, so a click on a point of the second finds the second's row."""
    first = compare(MLP, ["v100", "a100"])._repr_html_()
    second = compare(MLP, ["a100", "h100"], batch=8)._repr_html_()
    blocks_html = f"<!DOCTYPE html><html><body>{first}{second}"
    opened = open_page(blocks_html + sweep(MLP, "a100", "1..64")._repr_html_() + "</body></html>")
    assert opened.errors == []
    assert opened.page.locator(".rl[data-ready]").count() == 3
    x, y = opened.hover("div.rl >> nth=1 >> svg .pt")
    # the point on top where the mouse is (a coincident GEMM may be drawn over the first)
    top = opened.page.evaluate("([x, y]) => document.elementFromPoint(x, y).dataset.r", [x, y])
    opened.page.mouse.click(x, y)
    focused = opened.page.evaluate("document.activeElement.id")
    assert focused == top
    first_prefix, second_prefix = (
        opened.page.locator(f"div.rl >> nth={i} >> svg .pt").first.get_attribute(
            "data-r").split("-")[0] for i in (0, 1))
    assert first_prefix != second_prefix and focused.startswith(second_prefix + "-")
    assert opened.page.locator("div.rl >> nth=1").locator(f"#{focused}").count() == 1


#: pairs of a plan chart's front labels whose glyphs overlap: each label's box as the browser
#: measures it (``getBBox``, before its turn), in the frame turned by the labels' common slope
#: (``translate(x y) rotate(-a)``), where two boxes overlap only if both their spans do
_OVERLAPPING_FRONT_LABELS = """() => {
  const out = [];
  document.querySelectorAll(".rl svg").forEach(svg => {
    const boxes = Array.from(svg.querySelectorAll("text.front-label"), t => {
      const m = /translate\\(([-\\d.]+) ([-\\d.]+)\\) rotate\\(([-\\d.]+)\\)/.exec(
        t.getAttribute("transform"));
      const [x, y, a] = [+m[1], +m[2], -m[3] * Math.PI / 180], b = t.getBBox();
      const along = x * Math.cos(a) - y * Math.sin(a), across = x * Math.sin(a) + y * Math.cos(a);
      return [t.textContent, along + b.x, along + b.x + b.width, across + b.y,
              across + b.y + b.height];
    });
    boxes.forEach((p, i) => boxes.slice(i + 1).forEach(q => {
      if (p[1] < q[2] && q[1] < p[2] && p[3] < q[4] && q[3] < p[4]) out.push([p[0], q[0]]);
    }));
  });
  return out;
}"""


def test_a_plan_page(open_page):
    """plan's page: no console error, nothing fetched; a point per fitting layout and per
    layout on the front; a front point's tooltip, and a click on it finds its row; a count's
    table sorts by its figures; the chart's text inside the chart, the front's labels apart
    (Mixtral-8x7B on 8-32 A100s, 8 GPUs holding none of its layouts, and Llama-2-7B over
    8..512 H100s, its last label turned down-left off the chart's right edge)."""
    mixtral = plan(MIXTRAL, "a100", "8..32", batch=64, seq=4096)
    opened = open_page(plan_page(mixtral, command="roofline plan mixtral"), "plan.html")
    assert opened.errors == []
    assert [url for url in opened.requests if url != opened.page.url] == []
    assert opened.page.locator("main.rl[data-ready]").count() == 1
    assert opened.page.locator("svg .pt.lay").count() == len(mixtral.fitting) == 84
    assert opened.page.locator("svg .pt.front-pt").count() == len(mixtral.front) == 2
    best = mixtral.best
    tip = opened.page.locator(".rl .tip")
    x, y = opened.hover('svg .pt.front-pt[data-r="p-32-0"]')
    assert tip.is_visible()
    assert tip.inner_text().startswith(f"Pareto front: {best.layout.label} on 32 GPUs\n"
                                       f"predicted {seconds(best.predicted_step_s)} (fitted)")
    opened.page.mouse.click(x, y)
    assert opened.page.evaluate("document.activeElement.id") == "p-32-0"
    # the 32 GPUs' table (the second: 8 GPUs have none) sorted by the data-parallel time
    # hidden behind the backward passes, both ways (printed fastest step first: 2.65 s, 1.75
    # s, 643 ms)
    held = sorted(r.predicted.parts["dp_comm_overlapped_s"] for r in mixtral.ranked(32)[:3])
    table = opened.page.locator("table.sortable").nth(1)
    index = 13  # gpus tp pp dp ep zero mb m sp predicted roofline compute comm exposed, hidden

    def column() -> list[float]:
        return [float(v) for v in table.evaluate(
            "(t, i) => Array.from(t.tBodies[0].rows, r => r.cells[i].dataset.v)", index)]

    assert column() != held
    header = table.locator("th", has_text="comm hidden")
    header.locator("button").click()
    assert column() == held
    header.locator("button").click()
    assert column() == held[::-1]
    assert header.get_attribute("aria-sort") == "descending"
    assert opened.page.evaluate(_MISPLACED_TEXT) == []
    assert opened.page.evaluate(_OVERLAPPING_FRONT_LABELS) == []
    llama = plan(LLAMA, "h100", "8..512", batch=512, seq=4096)
    opened = open_page(plan_page(llama, top=1), "plan-llama.html")
    assert opened.errors == []
    assert opened.page.locator("svg text.front-label").count() == len(llama.front) == 7
    assert opened.page.evaluate(_MISPLACED_TEXT) == []
    assert opened.page.evaluate(_OVERLAPPING_FRONT_LABELS) == []
