"""The HTML report as text: one self-contained page (analyze, compare, sweep), its inline SVG
chart, escaping of every name that comes from a user's file, the size of big models' pages, and
Jupyter's ``_repr_html_`` built by the same renderer. The page in a real browser:
tests/test_report_browser.py."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from roofline import analyze_model
from roofline.output.html import report_page
from roofline.output.report import View

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
RESNET = ROOT / "examples" / "resnet50.yaml"
LLAMA = ROOT / "examples" / "hf" / "llama-2-7b.json"
VOID = {"meta", "link", "input", "br", "img", "hr", "col", "source", "wbr"}


class _Page(HTMLParser):
    """Fails on an unbalanced tag; records every element's attributes and each point."""

    def __init__(self):
        super().__init__()
        self.stack, self.elements, self.titles = [], [], []
        self._title = None

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.stack and self.stack.pop() == tag, f"unbalanced </{tag}>"

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "title" and "svg" in self.stack:
            self.titles.append(data)

    def points(self) -> list[dict]:
        return [a for tag, a in self.elements if "pt" in (a.get("class") or "").split()]


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    assert page.stack == [], page.stack
    return page


def test_the_page_is_one_document_that_fetches_nothing():
    text = report_page([analyze_model(MLP, "a100-sxm4-80gb")])
    assert text.startswith("<!DOCTYPE html>\n<html") and text.endswith("</html>\n")
    page = parse(text)
    for tag, attrs in page.elements:
        assert "src" not in attrs, (tag, attrs)  # no script, image or frame from anywhere
        if tag == "link":
            assert attrs["href"].startswith("data:"), attrs
        if tag in ("a",):
            assert attrs["href"].startswith("https://"), attrs  # the sources' links, to click
    assert "@import" not in text and "url(http" not in text and "@font-face" not in text
    assert text.count("<script>") == 1 and text.count("<style>") == 1


def test_one_point_per_gemm_and_op():
    # the MLP trains with 3n - 1 = 5 GEMMs (2 linear layers) and has no other op
    page = parse(report_page([analyze_model(MLP, "a100-sxm4-80gb")]))
    assert [p["data-r"] for p in page.points()] == [f"r0-MM{i}" for i in range(1, 6)]
    # ResNet-50: every GEMM and op one point, each linked to its row
    report = analyze_model(RESNET, "a100-sxm4-80gb")
    page = parse(report_page([report]))
    assert len(page.points()) == len(report.results) + len(report.ops) == 161 + 243
    rows = {a["id"] for tag, a in page.elements if tag == "tr" and "id" in a}
    assert {p["data-r"] for p in page.points()} == rows


def test_a_gathers_point_is_left_out_and_the_caption_says_so():
    # llama-2-7b at the default view: the first copy of its 32 blocks, plus the embedding's
    # gather and the block's copy of the new K and V into the cache (no FLOPs in fp16: no
    # place on a log axis)
    report = analyze_model(LLAMA, "h100-sxm5-80gb", batch=1, seq=2048, mode="inference")
    gemms = [r for r in report.results if r.gemm.copy == 0]
    ops = [r for r in report.ops if r.op.copy == 0]
    gathers = [r for r in ops if r.op.flops == 0]
    assert [r.op.kind for r in gathers] == ["embedding-gather", "kv-cache-write"]
    text = report_page([report])
    assert len(parse(text).points()) == len(gemms) + len(ops) - 2
    assert ("2 ops without FLOPs (embedding-gather, kv-cache-write) have no place on the "
            "chart") in text


def test_every_sourced_figure_has_its_value():
    # V100's datasheet: 300 W, HBM2 16 GB; the whitepaper: 6 MB of L2; NVLink 2.0, 6 links;
    # a public deviceQuery: "16160 MBytes (16945512448 bytes)" as CUDA reports it
    text = report_page([analyze_model(MLP, "v100-sxm2-16gb")])
    rows = dict(re.findall(r"<tr><td class=t>([a-z_]+)</td><td class=t>(.*?)</td>", text))
    assert rows["tdp_w"] == "300" and rows["llc_mb"] == "6"
    assert rows["memory"] == "type=HBM2, capacity_gb=16, reported_bytes=16945512448"
    assert rows["nvlink"] == "version=2, links=6, bandwidth_gbs=300"
    assert all(rows.values()), [k for k, v in rows.items() if not v]
    assert "Entry <b>v100-sxm2-16gb</b> (datasheet) bundled with roofline." in text


def test_large_tick_labels_take_a_prefix():
    from roofline.output.html.svg import tick_text

    # a samples/s axis from 100,000 up: "1,000,000" ran into the axis title
    assert [tick_text(v) for v in (0.01, 2000, 20_000, 1e5, 1e6, 1e7)] == [
        "0.01", "2,000", "20,000", "100k", "1M", "10M"]


def test_a_tooltip_holds_the_gemms_intensity_worked_by_hand():
    # MM1 of the MLP at batch 512, fp16 in and out: M 512, N 4096, K 1024
    flops = 2 * 512 * 4096 * 1024                      # 4,294,967,296
    nbytes = 2 * (512 * 1024 + 1024 * 4096) + 2 * 512 * 4096  # 13,631,488
    assert round(flops / nbytes, 1) == 315.1
    page = parse(report_page([analyze_model(MLP, "a100-sxm4-80gb")]))
    tip = page.titles[0]
    assert tip.splitlines() == [
        "MM1 \u00b7 fc1 \u00b7 forward", "GEMM 512 x 4096 x 1024 (M x N x K)",
        "315.1 FLOP/B, compute-bound", tip.splitlines()[3]]
    assert tip.splitlines()[3].startswith("time ")


def test_an_ops_tooltip_gives_its_predicted_time_as_a_gemms_does():
    """An op's tooltip said its roof time alone (``time 39.1 ns (roof)``) beside a GEMM's
    ``time 30.1 us (roof), 39.9 us predicted``: both now give both, in one form."""
    from roofline.units import seconds

    report = analyze_model(LLAMA, "h100", mode="inference", phase="decode", batch=8, seq=4096)
    tips = {tip.split(" ")[0]: tip for tip in parse(report_page([report])).titles}
    results = {r.gemm.name: r for r in report.results} | {r.op.name: r for r in report.ops}
    assert any(name.startswith("OP") for name in tips)  # a repeated block's ops drawn once
    for name, tip in tips.items():
        r = results[name]
        assert r.predicted_time_s > 0
        assert tip.splitlines()[-1] == (f"time {seconds(r.time_s)} (roof), "
                                        f"{seconds(r.predicted_time_s)} predicted"), tip
    # an op's prediction is its own (rmsnorm: 39.1 ns at the roof, 944 ns predicted)
    assert "rmsnorm" in tips["OP2"] and results["OP2"].predicted_time_s > results["OP2"].time_s


def test_points_sit_where_their_numbers_say():
    """A point's pixel position is the log of its intensity and throughput on the axes the
    tick labels name: checked for MM1 from two tick labels, not from the chart's own code."""
    text = report_page([analyze_model(MLP, "a100-sxm4-80gb", batch=8)])
    svg = text[text.index("<svg"):text.index("</svg>")]
    ticks = {float(v.replace(",", "")): float(x) for x, v in re.findall(
        r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle">([\d.,]+)</text>', svg)}
    (a, xa), (b, xb) = sorted(ticks.items())[:2]
    # MM1 at batch 8: M 8, N 4096, K 1024, fp16: 2*8*4096*1024 / 2(8*1024 + 1024*4096 + 8*4096)
    intensity = 2 * 8 * 4096 * 1024 / (2 * (8 * 1024 + 1024 * 4096 + 8 * 4096))  # 7.92 FLOP/B
    import math

    expected = xa + (xb - xa) * math.log10(intensity / a) / math.log10(b / a)
    first = re.search(r'class="pt m" data-r="r0-MM1" cx="([\d.]+)"', svg)
    assert first, "MM1 at batch 8 is memory-bound: a circle"
    assert float(first.group(1)) == pytest.approx(expected, abs=0.2)


HOSTILE = "<script>alert(1)</script>"


def test_names_from_user_files_are_escaped(tmp_path, isolated_user_hwdb):
    model = tmp_path / "model.yaml"
    model.write_text(
        'name: "<b>bold</b> & co"\nbatch: 64\ndtype: fp16\nmode: train\nlayers:\n'
        f'  - {{type: linear, in: 1024, out: 4096, name: "{HOSTILE}"}}\n'
        '  - {type: linear, in: 4096, out: 1000, name: "x\\" onmouseover=\\"alert(2)"}\n')
    entry = (ROOT / "hwdb" / "gpu" / "a100-sxm4-80gb.yaml").read_text(encoding="utf-8")
    entry = entry.replace("name: a100-sxm4-80gb", "name: evil-gpu")
    entry = re.sub(r"- title: .*", '- title: "<img src=x onerror=alert(3)>"', entry, count=1)
    entry = re.sub(r"aliases: \[[^]]*\]", "aliases: []", entry)
    (isolated_user_hwdb / "evil-gpu.yaml").write_text(entry, encoding="utf-8")
    text = report_page([analyze_model(model, "evil-gpu")], command=f"roofline {HOSTILE}")
    assert HOSTILE not in text and "<b>bold" not in text and "onmouseover=\"" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in text
    assert "<img" not in text and "&lt;img src=x onerror=alert(3)&gt;" in text
    page = parse(text)
    layers = {a["data-layer"] for tag, a in page.elements if tag == "tr" and "data-layer" in a}
    assert HOSTILE in layers  # the attribute holds the name itself, once parsed
    assert text.count("<script>") == 1


@pytest.mark.parametrize("expand", [False, True])
def test_big_models_stay_under_a_megabyte(expand):
    view = View(expand=expand)
    resnet = report_page([analyze_model(RESNET, "a100-sxm4-80gb", mode="train")], view)
    llama = report_page([analyze_model(LLAMA, "h100-sxm5-80gb", batch=8, seq=4096,
                                       mode="train")], view)
    for text in (resnet, llama):
        assert len(text.encode("utf-8")) < 1_000_000
    if expand:  # every one of the 32 blocks' rows and points, less the embedding's gather
        report = analyze_model(LLAMA, "h100-sxm5-80gb", batch=8, seq=4096, mode="train")
        # ops: 452, and the rotary embedding forward and backward in each of 32 blocks
        assert len(report.results) + len(report.ops) == 387 + 452 + 64
        assert len(parse(llama).points()) == 387 + 452 + 64 - 1


def test_jupyter_shows_the_same_block():
    report = analyze_model(MLP, "a100-sxm4-80gb", batch=100)
    first, second = report._repr_html_(), report._repr_html_()
    page = parse(first)
    assert [p["data-r"].split("-")[1] for p in page.points()] == [f"MM{i}" for i in range(1, 6)]
    assert all("m" in p["class"].split() for p in page.points())  # batch 100: memory-bound
    ids = {a["id"] for tag, a in page.elements if "id" in a}
    assert not ids & {a["id"] for tag, a in parse(second).elements if "id" in a}
    assert first.count("<style>") == 1 and first.count("<script>") == 1
    whole = report_page([report])
    for piece in ('<table class="sortable filterable">', "Warnings and advice</h",
                  "no batch reaches" if "no batch reaches" in whole else "batch &gt;="):
        assert piece in first and piece in whole


def test_memory_bound_is_told_without_colour():
    report = analyze_model(MLP, "a100-sxm4-80gb", batch=100)
    text = report_page([report])
    assert "<circle" in text and "<rect class=\"pt" not in text  # memory-bound: circles
    assert text.count("\u25cf memory</td>") == 5  # the row says it in words and shape
    compute = report_page([analyze_model(MLP, "a100-sxm4-80gb")])
    assert '<rect class="pt c"' in compute and "\u25a0 compute</td>" in compute
    assert "@media print" in text and 'tabindex="0"' in text


def test_cli_analyze_html_names_the_command(invoke):
    res = invoke("analyze", MLP, "--hw", "a100", "--format", "html")
    assert res.exit_code == 0
    assert res.stdout.startswith("<!DOCTYPE html>")
    assert f"<code>roofline analyze {MLP} --hw a100 --format html</code>" in res.stdout
    two = invoke("analyze", MLP, "--hw", "a100", "--hw", "v100", "--format", "html").stdout
    assert two.count("<!DOCTYPE html>") == 1 and two.count("<article") == 2
    assert 'data-r="r0-MM1"' in two and 'data-r="r1-MM1"' in two


def test_cli_compare_and_sweep_html(invoke):
    res = invoke("compare", MLP, "--hw", "v100", "--hw", "a100", "--format", "html")
    assert res.exit_code == 0
    page = parse(res.stdout)
    assert 'class="verdict"' in res.stdout and "a100-sxm4-80gb is the fastest" in res.stdout
    assert len(page.points()) == 2 * 5  # one chart per device, a point per GEMM
    assert res.stdout.count('class="bar-m"') == 2 + 1  # a bar per device, and the key
    assert "its GEMMs" not in res.stdout  # the MLP has no other op: nothing left undrawn
    res = invoke("compare", RESNET, "--hw", "v100", "--hw", "a100", "--format", "html")
    # ResNet-50's 243 other ops count in the step times; the per-device rooflines draw GEMMs
    assert res.stdout.count("its GEMMs; its 243 other ops (first copies) count in the step "
                            "times above, not drawn here") == 2
    res = invoke("sweep", MLP, "--hw", "a100", "--batch", "1..4096", "--format", "html")
    assert res.exit_code == 0
    parse(res.stdout)
    # closed form: MM1 (512 x 4096 x 1024 at batch 512) turns compute-bound where
    # 2 B 4096 1024 / 2(1024 B + 1024 4096 + 4096 B) >= 312/2.039 = 153.0
    assert "batch &gt;= " in res.stdout and 'class="mark"' in res.stdout
    assert len(re.findall(r'class="pt c"', res.stdout)) == 2 * 13  # 2 charts, 13 batches


def test_the_html_package_imports_no_numpy_or_matplotlib():
    code = ("import sys, roofline.output.html; "
            "print(sorted(m for m in ('numpy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_assets_ship_with_the_package():
    from importlib.resources import files

    folder = files("roofline.output.html")
    assert folder.joinpath("page.css").read_text(encoding="utf-8").lstrip().startswith("/*")
    assert "function" in folder.joinpath("page.js").read_text(encoding="utf-8")


def test_the_cli_choices_are_the_renderers():
    """cli.FORMATS is a literal (so that --help imports no renderer): the same names as the
    renderers' tables, html included."""
    from roofline.cli import FORMATS
    from roofline.output.report import REPORT_FORMATS
    from roofline.output.whatif import COMPARE_FORMATS
    from roofline.output.whatif_sweep import SWEEP_FORMATS

    assert set(FORMATS) == set(REPORT_FORMATS) == set(COMPARE_FORMATS) == set(SWEEP_FORMATS)
    assert "html" in FORMATS


def test_jupyter_shows_compare_and_sweep_as_their_pages_blocks():
    """Comparison and Sweep display in Jupyter as the block of their HTML page: the verdict
    with its predicted sentence, the devices with their predicted column, the sweep's
    predicted column and basis line; each compare block's ids its own."""
    from roofline import compare, sweep

    c = compare(MLP, ["v100", "a100"], batch=64)
    first, second = c._repr_html_(), c._repr_html_()
    for piece in ("Predicted (v100-sxm2-16gb fitted, a100-sxm4-80gb fitted)",
                  "predicted speedup", "<h2>Why</h2>", "<h2>Sources</h2>"):
        assert piece in first
    # the bar chart's hatch pattern (rl-hatch) is the same definition in every block
    ids = {a["id"] for tag, a in parse(first).elements if "id" in a} - {"rl-hatch"}
    assert ids and not ids & {a["id"] for tag, a in parse(second).elements if "id" in a}
    assert first.count("<style>") == 1 and first.count("<script>") == 1
    page = sweep(MLP, "a100-sxm4-80gb", [1, 64])._repr_html_()
    assert "predicted samples/s" in page and "predicted: fitted" in page


def test_a_sweep_page_says_what_its_step_times_are_and_ends_with_the_step_verdict():
    from roofline.analysis.whatif import sweep
    from roofline.output.html import sweep_page

    page = sweep_page(sweep("examples/mlp-1024-4096-1000.yaml", "v100", [1, 256],
                            mode="inference"))
    assert "<p>step time, samples/s: the roof (the pure roofline time of each GEMM and op as " \
           "a pass of its own, a lower bound from DRAM)" in page
    assert ("<p>step: compute-bound from batch 168 (the whole step&#x27;s FLOP time reaches "
            "its byte time)</p>") in page
    assert "<h3>Step:" not in page


def _sweep_charts(page: str) -> str:
    """The sweep page's charts and their captions (before its table)."""
    return page[page.index("<h2>Throughput and bound</h2>"):page.index("<h2>Steps</h2>")]


def test_a_sweeps_throughput_chart_draws_the_prediction_it_has():
    """The throughput chart drew the roofline's samples/s only, beside a table whose predicted
    column differs (an A100's fitted prediction of the MLP); now both, named in a key."""
    from roofline.analysis.predict import basis_of
    from roofline.analysis.whatif import sweep
    from roofline.output.html import sweep_page
    from roofline.units import seconds, si

    s = sweep(MLP, "a100-sxm4-80gb", [1, 64])
    assert basis_of(s.hardware) == "fitted"
    charts = _sweep_charts(sweep_page(s))
    page = parse(charts)
    assert charts.count('<polyline class="curve"') == 2  # throughput and memory-bound share
    assert charts.count('<polyline class="curve pred"') == 1
    predicted = [a for a in page.points() if a["class"] == "pt p"]
    assert len(predicted) == 2  # one a batch, in the throughput chart only
    tips = "\n".join(page.titles)
    for r in s.reports:
        p = r.totals["predicted_time_s"]
        assert f"batch {r.batch}\npredicted step {seconds(p)}, {si(r.batch / p, 'samples/s')}" \
            in tips
        assert f"batch {r.batch}\nroofline step {seconds(r.totals['time_s'])}" in tips
    assert ">roofline</text>" in charts and ">predicted (fitted)</text>" in charts  # the key
    assert ("Throughput: the roofline&#x27;s, an upper bound (its step time a lower bound), "
            "and the predicted, on the entry&#x27;s fitted basis.") in charts


def test_a_datasheet_sweep_draws_one_throughput_line_and_says_why():
    from roofline.analysis.whatif import sweep
    from roofline.output.html import sweep_page

    charts = _sweep_charts(sweep_page(sweep(MLP, "xeon-platinum-8380", [1, 64], dtype="fp32")))
    assert "curve pred" not in charts and 'class="pt p"' not in charts
    assert "a datasheet entry predicts nothing beyond it" in charts
    assert ">roofline</text>" in charts  # its key names the line drawn


def test_a_sweep_caption_speaks_of_dashed_lines_only_where_they_are_drawn():
    """Llama-2-7B decode at batch 1 on an H100: no GEMM turns compute-bound at any swept
    seq (a token a sequence), so no line is drawn; the caption said "Dashed lines: ..."."""
    from roofline.analysis.whatif import sweep
    from roofline.output.html import sweep_page

    s = sweep(LLAMA, "h100", [1], seqs=[128, 1024, 4096], mode="inference", phase="decode")
    charts = _sweep_charts(sweep_page(s))
    assert 'class="mark"' not in charts and "Dashed lines" not in charts
    assert "No GEMM turns compute-bound within the swept seqs" in charts
    charts = _sweep_charts(sweep_page(sweep(MLP, "a100-sxm4-80gb", [1, 4096])))
    assert 'class="mark"' in charts and "Dashed lines: the batch at which" in charts


def test_name_cells_are_marked_for_print_to_break():
    """A printed page fits a wide table to A4 by breaking names (a GEMM's, a layer's, a
    device's) anywhere and every other cell only between words (``page.css``): the name cells
    say so."""
    from roofline import compare
    from roofline.output.html import comparison_page

    page = parse(report_page([analyze_model(RESNET, "h100", mode="train")]))
    cells = [a for tag, a in page.elements if tag == "td" and "n" in (a.get("class") or "").split()]
    assert len(cells) == 2 * (161 + 243)  # name and layer of every GEMM and op row
    text = comparison_page(compare(MLP, ["v100", "a100"]))
    assert '<td class="t n">v100-sxm2-16gb</td>' in text
    assert '<td class="t n">MM1</td><td class="t n">fc1</td>' in text



class _Tables(HTMLParser):
    """Every sortable table: each column's ``data-type`` and each row's cells, a cell as
    (its ``data-v`` or None, its text)."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self._cell: list | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "sortable" in (a.get("class") or "").split():
            self.tables.append({"types": [], "heads": [], "rows": []})
        elif not self.tables or self.tables[-1].get("done"):
            return
        elif tag == "th":
            self.tables[-1]["types"].append(a.get("data-type"))
            self._cell = [None, ""]
        elif tag == "tr" and self.tables[-1]["types"]:
            self.tables[-1]["rows"].append([])
        elif tag == "td":
            self._cell = [a.get("data-v"), ""]

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data

    def handle_endtag(self, tag):
        if tag == "th" and self._cell is not None:
            self.tables[-1]["heads"].append(self._cell[1])
            self._cell = None
        elif tag == "td" and self._cell is not None:
            self.tables[-1]["rows"][-1].append(tuple(self._cell))
            self._cell = None
        elif tag == "table" and self.tables and not self.tables[-1].get("done"):
            self.tables[-1]["done"] = True


#: a number as JavaScript's ``Number`` reads it whole (page.js sorts a number column so)
_JS_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?|-?Infinity")


def _sort_pages():
    from roofline import compare, sweep
    from roofline.output.html import comparison_page, sweep_page

    yield "analyze", report_page([analyze_model(RESNET, "h100", mode="train"),
                                  analyze_model(LLAMA, "h100", mode="inference",
                                                phase="decode", batch=8, seq=4096)])
    yield "compare", comparison_page(compare(MLP, ["v100", "a100", "xeon-platinum-8480plus"],
                                             batch=64))
    yield "compare", comparison_page(compare(RESNET, ["v100", "a100", "h100"]))
    yield "sweep", sweep_page(sweep(MLP, "xeon-platinum-8480plus", "1..524288", dtype="bf16"))
    yield "sweep", sweep_page(sweep(LLAMA, "h100", [1, 8], seqs=[512, 4096], mode="inference"))


def test_every_number_column_sorts_by_a_number_or_by_none():
    """A number column sorts by its cells' ``data-v``, else their text, read as a number:
    each key a whole number (``1.64 GB`` read as 1.64 sorted sweep's memory column 1.64 GB,
    3.24 GB, 33.2 MB, ...), or none, a blank or ``-`` (sorted last)."""
    seen = set()
    for kind, text in _sort_pages():
        parser = _Tables()
        parser.feed(text)
        assert parser.tables, kind
        for table in parser.tables:
            for index, (head, type_) in enumerate(zip(table["heads"], table["types"])):
                assert type_ in ("num", "text"), (kind, head)
                keys = [shown.strip() if value is None else value
                        for value, shown in (row[index] for row in table["rows"])]
                if type_ != "num":  # a text column of figures sorts 33.2 MB after 3.24 GB
                    figures = [k for k in keys if k not in ("", "-")]
                    assert not figures or not all(k[0].isdigit() for k in figures), (kind, head)
                    continue
                seen.add((kind, head))
                for key in keys:
                    assert key in ("", "-") or _JS_NUMBER.fullmatch(key), (kind, head, key)
    assert {("sweep", "memory"), ("compare", "memory"), ("compare", "predicted speedup"),
            ("analyze", "M"), ("sweep", "seq")} <= seen


def _texts(svg_text: str) -> list[tuple[dict, str]]:
    """Each ``<text>`` of an SVG: its attributes and its words."""
    return [(dict(re.findall(r'([\w-]+)="([^"]*)"', attrs)), words)
            for attrs, words in re.findall(r"<text([^>]*)>([^<]*)</text>", svg_text)]


def test_chart_labels_are_placed_inside_the_chart_and_off_the_ridge():
    """A label's extent is estimated at ``svg.CHAR_PX`` a character (Chromium draws 6.4-6.6;
    tests/test_report_browser.py measures the drawn text): near the right edge the ridge's
    label turns to the line's left, the peak's goes above the ceiling rather than across the
    ridge, a transition's label turns left too; a bar chart makes room for its longest name
    and end text."""
    from roofline.output.html import svg

    # llama decode on an H100: ridge 989.5e3 / 3350 = 295.4 FLOP/B, the x axis up to 1000
    x_range, y_range = (0.05, 1000.0), (0.1, 2000.0)
    chart = svg.roofline_chart([], 989.5, 3350, x_range, y_range, "roofline")
    x, y = svg.Axis(*x_range, svg.LEFT, svg.WIDTH - svg.LEFT - svg.RIGHT), svg.Axis(
        *y_range, svg.TOP, svg.HEIGHT - svg.TOP - svg.BOTTOM, flip=True)
    texts = {words.split()[0]: attrs for attrs, words in _texts(chart)}
    ridge_at = x.at(989.5e3 / 3350)
    assert ridge_at + 4 + svg.text_px("ridge 295.4 FLOP/B") > svg.WIDTH - svg.RIGHT  # no room
    assert texts["ridge"]["text-anchor"] == "end" and float(texts["ridge"]["x"]) < ridge_at
    assert float(texts["peak"]["y"]) < y.at(989.5)  # above the ceiling, off the ridge's line
    # a ridge with room on its right keeps its label there, and the peak's below the ceiling
    chart = svg.roofline_chart([], 312, 2039, (0.1, 10_000.0), (0.01, 500.0), "roofline")
    texts = {words.split()[0]: attrs for attrs, words in _texts(chart)}
    assert "text-anchor" not in texts["ridge"] and float(texts["peak"]["y"]) > 30
    # a transition at the right edge: its label on the line's left
    chart = svg.line_chart([svg.Curve([(1, 1, ""), (512, 2, "")])], (1, 512), (0.5, 5),
                           ("batch", "samples/s"), "sweep", marks=[svg.Mark(500, "MM1 -> "
                                                                                "compute")])
    (mark, _), = [(a, w) for a, w in _texts(chart) if a.get("class") == "mark-label"]
    assert mark["text-anchor"] == "end"
    # bars: the longest name starts inside the chart, the longest end text ends inside it
    bars = [svg.Bar("v100-sxm2-16gb", 1.0, 3.0, "4.05 s (baseline), does not fit"),
            svg.Bar("xeon-platinum-8480plus", 0.5, 2.0, "2.48 s (1.63x)")]
    chart = svg.bar_chart(bars, "step time")
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ', chart).group(1))
    for attrs, words in _texts(chart):
        at = float(attrs["x"])
        start = at - svg.text_px(words) if attrs.get("text-anchor") == "end" else at
        assert 0 <= start and start + svg.text_px(words) <= width, words


def test_a_generations_page_leads_with_what_serving_asks():
    # Llama-2-7B, batch 8, prompt 1024 + 256 tokens on an H100: the summary's first figures are
    # the predicted time to first token, time per output token and output tokens a second
    # (batch x generated / latency = 8 x 256 / (TTFT + 255 TPOTs)); the step's own figures
    # say they are the last decode step's (they read as the whole generation's)
    report = analyze_model(LLAMA, "h100", batch=8, prompt=1024, generate=256)
    g = report.generation
    assert g.predicted_tokens_per_s == pytest.approx(
        8 * 256 / (g.predicted_ttft_s + 255 * g.predicted_tpot_s))
    page = report_page([report], View())
    summary = page[page.index('<ul class="figures">'):]
    labels = re.findall(r"<span>([^<]*)</span>", summary)[:5]
    assert labels == ["time to first token, predicted", "per output token, predicted",
                      "output tokens a second, predicted", "last decode step, roof",
                      "last decode step, predicted"]
    plain = report_page([analyze_model(MLP, "a100")], View())
    assert "<span>step time, roof</span>" in plain and "first token" not in plain


def test_transition_labels_take_rows_of_their_own_and_keep_off_other_marks_lines():
    """Mistral-7B's int4 decode on an L4 at seq 1279 swept over batch 1..256 turns its GEMMs
    compute-bound at batch 116, 117, 118, 124 and 129 (closed form: the sweep's list): five
    lines within 12 px. Labels took rows ``index % 4``, so the fifth was drawn over the first
    ("MM2,MM6,+30 -> computeMM129 -> compute") and the ones turned left ran across the other
    lines. Now no two labels share a row and overlap, and none crosses a line outside its
    cluster."""
    from roofline.output.html import svg

    x_range = (0.5, 500.0)
    marks = [svg.Mark(b, f"{name} \u2192 compute") for b, name in
             ((116, "MM129"), (117, "MM3,MM7,+30"), (118, "MM4,MM8,+30"), (124, "MM1,MM5,+30"),
              (129, "MM2,MM6,+30"), (2, "MM9"))]
    chart = svg.line_chart([svg.Curve([(1, 1, ""), (256, 2, "")])], x_range, (0.5, 5),
                           ("batch", "samples/s"), "sweep", marks=marks)
    x = svg.Axis(*x_range, svg.LEFT, svg.WIDTH - svg.LEFT - svg.RIGHT)
    boxes = []
    for attrs, words in _texts(chart):
        if attrs.get("class") != "mark-label":
            continue
        at, width = float(attrs["x"]), svg.text_px(words)
        start = at - width if attrs.get("text-anchor") == "end" else at
        assert x.start <= start and start + width <= x.start + x.length, words
        boxes.append((start, start + width, float(attrs["y"]), words))
    assert len(boxes) == 6
    for i, (a0, a1, ay, words) in enumerate(boxes):
        for b0, b1, by, other in boxes[i + 1:]:
            assert ay != by or a1 <= b0 or b1 <= a0, (words, other)
    # batch 2's label, alone, crosses none of the five lines near 120
    (start, end, _, _), = [b for b in boxes if b[3].startswith("MM9")]
    assert not any(start < x.at(m.x) < end for m in marks if m.x != 2)


def test_a_sweep_page_shades_the_batches_that_do_not_fit_as_the_png_does():
    """Llama-2-7B training at seq 4096 on an H100 fits batch 2 (tests/test_charts.py: the PNG
    shades from 2.5 to 16 x 1.5 = 24, "does not fit in memory (batch > 2)"); the page's two
    charts drew nothing, though the README promised "a shaded band on its chart"."""
    from roofline import sweep
    from roofline.output.html import svg, sweep_page

    s = sweep(LLAMA, "h100", [1, 2, 4, 8, 16], seqs=[4096], mode="train")
    page = sweep_page(s)
    rects = re.findall(r'<rect class="nofit" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*>'
                       r"<title>([^<]*)</title>", page)
    # the x axis: 1 / 1.5 and 16 x 1.5 widened to 0.5 and 50, log, over 720 - 72 - 24 px
    x = svg.Axis(0.5, 50.0, svg.LEFT, svg.WIDTH - svg.LEFT - svg.RIGHT)
    assert len(rects) == 2  # throughput and memory-bound share
    for at, width, label in rects:
        assert float(at) == pytest.approx(x.at(2.5), abs=0.06)
        assert float(at) + float(width) == pytest.approx(x.at(24), abs=0.11)
        assert label == "does not fit in memory (batch &gt; 2)"
    assert page.count(">does not fit in memory (batch &gt; 2)</text>") == 2  # each chart's key
    fits = sweep(MLP, "a100", "1..512")  # every batch fits: nothing shaded
    assert 'class="nofit' not in sweep_page(fits)
