"""plan's --format markdown and html: the text's lines and tables as Markdown, and the page
(facts, a sortable table per GPU count, the chart of predicted step time against GPUs, the
front, the best layout) whose every figure is the JSON's; a hostile model name escaped in
both; the CLI's choices, and --format html beside --plot. The page in a browser:
tests/test_report_browser.py."""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from roofline import plan
from roofline.output.html import plan_page
from roofline.output.plan import PLAN_FORMATS, plan_json, plan_markdown, plan_table
from roofline.units import seconds

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
MIXTRAL = ROOT / "examples" / "hf" / "mixtral-8x7b.json"
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def mixtral():
    """8 GPUs hold none of its layouts (the weights, gradients and Adam's states alone need
    94.4 GB a GPU on 8 A100s); 16 and 32 do, some communication-bound."""
    return plan(MIXTRAL, "a100", "8..32", batch=64, seq=4096)


@pytest.fixture(scope="module")
def mlp():
    return plan(MLP, "h100", "1..4", batch=64)


class _Tables(HTMLParser):
    """Every table of a page: its header names and each row's cells as (data-v, text); and
    every chart point's attributes and tooltip."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self.points: list[dict] = []
        self._cell: list | None = None
        self._point: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"heads": [], "rows": [], "class": a.get("class") or ""})
        elif tag in ("th", "td"):
            self._cell = [a.get("data-v"), ""]
        elif tag == "tr" and self.tables and self.tables[-1]["heads"]:
            self.tables[-1]["rows"].append([])
        elif "pt" in (a.get("class") or "").split():
            self._point = a | {"tag": tag, "tip": ""}
            self.points.append(self._point)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data
        elif self._point is not None:
            self._point["tip"] += data

    def handle_endtag(self, tag):
        if tag == "th" and self._cell is not None:
            self.tables[-1]["heads"].append(self._cell[1])
            self._cell = None
        elif tag == "td" and self._cell is not None:
            self.tables[-1]["rows"][-1].append(tuple(self._cell))
            self._cell = None
        elif tag == "title":
            self._point = None


def _parse(text: str) -> _Tables:
    parser = _Tables()
    parser.feed(text)
    parser.close()
    return parser


def _sortable(page: _Tables) -> list[dict]:
    return [t for t in page.tables if "sortable" in t["class"].split()]


def test_the_markdown_has_the_texts_lines_and_tables(mixtral):
    """Every line of the text's header is a line of the Markdown (the assumptions bullets),
    every layout row of its tables a pipe-table row of the same cells, the lines under them and
    the best layout's too."""
    text, md = plan_table(mixtral), plan_markdown(mixtral)
    lines = md.splitlines()
    header = text.split("\n\n")[0].splitlines()
    for line in header:
        assert line in lines or f"{line}  " in lines or f"- {line}" in lines, line
    assert "## Fastest layouts that fit (up to 3 per GPU count; compute, comm and bubble: " \
           "parts of the predicted step)" in lines
    assert "## Pareto front (predicted step time against GPUs; efficiency against the " \
           "smallest)" in lines and "## Best on 32 GPUs" in lines
    rows = [line.split() for line in text.splitlines() if re.match(r"\s+\d+\s+\d+\s+\d+", line)]
    piped = [[cell for cell in line.strip("| ").split(" | ")] for line in lines
             if re.match(r"\| \d+ \| \d+ \|", line)]
    assert len(rows) == len(piped) == 6  # 3 layouts on 16 GPUs and 3 on 32
    assert [" ".join(r) for r in rows] == [" ".join(p) for p in piped]
    for line in ("8 GPUs: none of 106 layouts fits (the smallest needs 99.2 GB; without "
                 "activations, at least 94.4 GB)",
                 "no recomputation fits 8 GPUs: the weights, gradients, optimizer states and "
                 "workspace alone need 94.4 GB a GPU or more, past the 85.1 GB; more GPUs "
                 "divide them further"):
        assert line in text and (line in lines or f"{line}  " in lines)
    best = [line for line in text.splitlines() if line.startswith("  ") and line[2].isalpha()]
    assert best and all(f"- {line.strip()}" in lines for line in best)


def test_the_markdown_figures_are_the_jsons(mixtral):
    """Each row's predicted and roofline step, compute and exposed communication are the
    JSON's seconds as the text writes them; the front's efficiency is GPU-seconds against the
    smallest count's: 16 x 5.35 s / (32 x 2.71 s), computed from the JSON's own figures."""
    data = json.loads(plan_json(mixtral, 3))
    piped = [line.strip("| ").split(" | ") for line in plan_markdown(mixtral).splitlines()
             if re.match(r"\| \d+ \| \d+ \|", line)]
    layouts = [lay for c in data["counts"] for lay in c["layouts"]]
    assert len(piped) == len(layouts)
    for cells, lay in zip(piped, layouts):
        parts = lay["predicted_parts"]
        comm = (parts["tp_comm_s"] + parts["ep_comm_s"] + parts["p2p_s"]
                + parts["dp_comm_exposed_s"] + parts["tp_grad_allreduce_s"])
        assert cells[:8] == [str(lay[k]) for k in ("gpus", "tp", "pp", "dp", "ep", "zero",
                                                   "micro_batch", "micro_batches")]
        assert cells[9:13] == [seconds(lay["predicted_step_s"]), seconds(lay["step_s"]),
                               seconds(parts["compute_s"]), seconds(comm)]
        assert cells[15] == f"{lay['memory']['total_bytes'] / 1e9:.1f}"
    front = [line.strip("| ").split(" | ") for line in plan_markdown(mixtral).splitlines()
             if re.match(r"\| \d+ \| tp", line)]
    first, last = data["front"][0], data["front"][-1]
    share = (first["predicted_step_s"] * 16) / (last["predicted_step_s"] * 32)
    assert f"{share:.0%}" == front[-1][5] == "99%"


def test_the_pages_figures_are_the_jsons(mixtral):
    """Each count's table sorts by the JSON's own numbers (``data-v``, written as Python's
    repr of the float, which reads back to the same float); the front's likewise, its
    efficiency GPU-seconds against the smallest count's; every fitting layout is a point."""
    data = json.loads(plan_json(mixtral, 3))
    page = _parse(plan_page(mixtral))
    tables = _sortable(page)
    counts = [c for c in data["counts"] if c["layouts"]]
    assert [c["gpus"] for c in data["counts"] if not c["layouts"]] == [8]
    assert len(tables) == len(counts) + 1  # a table per count that has a layout, the front
    for table, count in zip(tables, counts):
        heads = table["heads"]
        assert heads[:3] == ["gpus", "tp", "pp"] and heads[-1] == "bound"
        assert len(table["rows"]) == len(count["layouts"]) == 3
        for row, lay in zip(table["rows"], count["layouts"]):
            cell = {head: value for head, (value, _) in zip(heads, row)}
            parts = lay["predicted_parts"]
            comm = (parts["tp_comm_s"] + parts["ep_comm_s"] + parts["p2p_s"]
                    + parts["dp_comm_exposed_s"] + parts["tp_grad_allreduce_s"])
            assert float(cell["predicted"]) == lay["predicted_step_s"]
            assert float(cell["roofline"]) == lay["step_s"]
            assert float(cell["compute"]) == parts["compute_s"]
            assert float(cell["comm exposed"]) == comm
            assert float(cell["comm hidden"]) == parts["dp_comm_overlapped_s"]
            assert float(cell["bubble"]) == lay["bubble_fraction"]
            assert float(cell["mem GB"]) == lay["memory"]["total_bytes"]
            assert float(cell["throughput"]) == lay["predicted_tokens_per_s"]
            assert cell["bound"] == lay["predicted_bound"]
            assert [float(cell[k]) for k in ("gpus", "tp", "dp", "zero", "mb", "m")] == [
                lay[k] for k in ("gpus", "tp", "dp", "zero", "micro_batch", "micro_batches")]
    front = tables[-1]
    assert front["heads"] == ["gpus", "layout", "predicted", "roofline", "throughput",
                              "efficiency", "bound"]
    first = data["front"][0]
    for row, lay in zip(front["rows"], data["front"]):
        assert float(row[2][0]) == lay["predicted_step_s"]
        assert float(row[3][0]) == lay["step_s"]
        share = (first["predicted_step_s"] * first["gpus"]) / (lay["predicted_step_s"]
                                                                 * lay["gpus"])
        assert float(row[5][0]) == pytest.approx(share, rel=1e-15)
    layouts = [p for p in page.points if "lay" in p["class"].split()]
    assert len(layouts) == sum(c["fitting"] for c in data["counts"]) == 84
    fronts = [p for p in page.points if "front-pt" in p["class"].split()]
    assert [p["tip"].split("\n")[1] for p in fronts] == [
        f"predicted {seconds(lay['predicted_step_s'])} (fitted), roofline "
        f"{seconds(lay['step_s'])}" for lay in data["front"]]
    # a front point finds its row: the first of its count's table
    ids = re.findall(r'<tr id="([^"]+)"', plan_page(mixtral))
    assert [p["data-r"] for p in fronts] == ["p-16-0", "p-32-0"] and set(ids) >= {"p-16-0",
                                                                                 "p-32-0"}


def test_the_page_says_what_the_text_says(mixtral):
    """The header's lines (links, memory, every assumption, the prediction's basis), the lines
    under the layout table and the best layout's lines are on the page, escaped as HTML."""
    text, page = plan_table(mixtral), unescape(plan_page(mixtral))
    for line in text.split("\n\n")[0].splitlines()[1:]:
        assert line.partition(": ")[2] in page, line
    for line in text.splitlines():
        if line.startswith(("8 GPUs:", "no recomputation", "best on", "  step", "  memory")):
            assert line.strip() in page, line
    assert "global batch 64 x seq 4096, bf16, optimizer adam, recompute none, attention " \
           "flash" in page
    assert "GPUs (no layout fits in memory at 8)" in page  # the chart's x axis, as the PNG's
    assert "predicted on the entry's fitted basis, the roofline a lower bound" in page


def test_the_chart_puts_the_front_where_its_numbers_say(mlp):
    """The MLP's plan over 1, 2 and 4 H100s: every layout fits (45), the front is 1 and 2 GPUs
    (4 GPUs are slower than 2). The x axis is log from 1 / 1.4 to 4 x 1.6 (as the PNG's) over
    the 624 px between the chart's margins (720 - 72 - 24), so 2 GPUs sit at
    72 + 624 ln(2 x 1.4) / ln(6.4 x 1.4) = 72 + 624 x 1.02962 / 2.19277 = 365.00 px and 1 GPU
    at 72 + 624 ln(1.4) / ln(8.96) = 72 + 624 x 0.33647 / 2.19277 = 167.75 px (written to a
    tenth of a pixel)."""
    assert [r.layout.gpus for r in mlp.front] == [1, 2] and len(mlp.fitting) == 45
    text = plan_page(mlp)
    found = {row: float(x) for row, x in re.findall(
        r'<circle class="pt front-pt" data-r="([^"]+)" cx="([^"]+)"', text)}
    assert found == {"p-1-0": pytest.approx(167.75, abs=0.051),
                     "p-2-0": pytest.approx(365.00, abs=0.051)}
    # memory-bound layouts are circles, the communication-bound diamonds: shape, not colour
    page = _parse(text)
    kinds = {(p["tag"], tuple(sorted(set(p["class"].split()) - {"pt", "lay"})))
             for p in page.points if "lay" in p["class"].split()}
    assert kinds <= {("circle", ("m",)), ("polygon", ("x",)), ("rect", ("c",)),
                     ("polygon", ("b",))} and ("circle", ("m",)) in kinds


def test_a_hostile_model_name_is_escaped(tmp_path):
    model = tmp_path / "model.yaml"
    model.write_text(f'name: "{HOSTILE}"\nbatch: 64\ndtype: fp16\nmode: train\nlayers:\n'
                     '  - {type: linear, in: 1024, out: 4096, name: "a<b>|c"}\n'
                     '  - {type: linear, in: 4096, out: 1000}\n')
    planned = plan(model, "h100", "1..2", batch=64)
    md = plan_markdown(planned)
    assert HOSTILE not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    for page in (plan_page(planned, command=f"roofline plan {HOSTILE}"),
                 planned._repr_html_()):
        assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert page.count("<script>") == 1  # the page's own script only
        _parse(page)


def test_the_cli_writes_the_page_on_stdout_and_the_chart_beside_it(invoke, tmp_path):
    pytest.importorskip("matplotlib")
    chart = tmp_path / "plan.png"
    res = invoke("plan", MLP, "--hw", "h100", "--gpus", "1..4", "--batch", "64", "--format",
                 "html", "--plot", chart)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("<!DOCTYPE html>\n") and res.stdout.endswith("</html>\n")
    assert res.stdout.count("<!DOCTYPE html>") == 1
    assert f"<code>roofline plan {MLP} --hw h100 --gpus 1..4 --batch 64 --format html " \
           f"--plot {chart}</code>" in res.stdout
    assert chart.read_bytes().startswith(b"\x89PNG") and f"wrote {chart}" in res.stderr
    md = invoke("plan", MLP, "--hw", "h100", "--gpus", "1..4", "--batch", "64", "--format",
                "markdown")
    assert md.exit_code == 0 and md.stdout == plan_markdown(plan(MLP, "h100", "1..4",
                                                                  batch=64))
    refused = invoke("plan", MLP, "--hw", "h100", "--gpus", "1", "--format", "html", "--gemms")
    assert refused.exit_code == 2 and "--format table" in refused.output


def test_the_cli_help_lists_the_formats_and_they_are_the_renderers(invoke):
    from roofline.cli.options import PLAN_FORMATS as CHOICES

    assert set(CHOICES) == set(PLAN_FORMATS) == {"table", "json", "csv", "markdown", "html"}
    res = invoke("plan", "--help")
    assert res.exit_code == 0
    assert "[table|json|csv|markdown|html]" in res.stdout
    assert "self-contained page" in re.sub(r"\s+", " ", res.stdout)
