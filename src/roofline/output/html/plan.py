"""The plan page: a training step's layouts over GPU counts (``roofline plan --format html``)
and the same block for Jupyter (``Plan._repr_html_``). Its sentences, cells and chart words are
``output.plan``'s, so the page says what the table says: the header's lines as facts and
lists, per GPU count the fastest fitting layouts as a sortable table, the chart of predicted
step time against GPUs (``svg.plan_chart``, the PNG's meaning), the Pareto front, the best
layout in words, the entry's sources."""

from __future__ import annotations

import secrets
from html import escape
from typing import TYPE_CHECKING

from ...analysis.predict import basis_of
from ...units import count, seconds, si
from .. import plan as words
from ..times import basis_sentence
from . import svg
from .page import (
    Cell,
    block,
    document,
    facts,
    figures,
    fragment,
    hardware_sources,
    paragraphs,
    provenance,
    table,
)

if TYPE_CHECKING:
    from ...analysis.parallel import LayoutResult
    from ...analysis.plan import Plan

#: What bounds a layout, as its cell writes it: the chart's shape (``svg.BOUND_SHAPES``), then
#: the word.
BOUND_SYMBOLS = {"memory": "\u25cf", "compute": "\u25a0", "communication": "\u25c6",
                 "pipeline bubble": "\u25b2"}
#: The layouts' bounds in the order the PNG's key gives them (``plot.plan.PLAN_COLORS``).
BOUNDS = ("compute", "memory", "communication", "pipeline bubble")


def _cells(shown: list[words.FigureCell], names: list[str]) -> list[Cell]:
    """A table's cells from ``output.plan``'s (text, figure): a figure sorts by itself
    (``data-v``); a word is text, a bound its symbol and word, a layout a name."""
    out = []
    for (text, value), name in zip(shown, names):
        if name == "bound":
            out.append(Cell(f"{BOUND_SYMBOLS[text]} {text}", text, is_text=True))
        elif name == "layout":
            out.append(Cell(text, is_name=True))
        else:
            out.append(Cell(text, value, is_text=value is None))
    return out


def _header(names: list[str]) -> list[tuple[str, bool]]:
    return [(name, name in ("layout", *words.TEXT_COLUMNS)) for name in names]


def _tip(plan: Plan, r: LayoutResult, unit: str) -> str:
    """A layout point's tooltip: its label and GPUs, the predicted step (on the entry's basis)
    and the roofline's, what bounds it, its throughput and memory a GPU."""
    p = r.predicted
    return (f"{r.layout.label} on {count(r.layout.gpus, 'GPU')}\n"
            f"predicted {seconds(p.step_s)} ({basis_of(plan.hardware)}), roofline "
            f"{seconds(r.step_s)}\n{p.bound}-bound, {si(p.tokens_per_s, unit)} predicted\n"
            f"{si(r.memory_bytes, 'B')} of memory a GPU")


def _facts(plan: Plan) -> list[tuple[str, str]]:
    net, hw = plan.network, plan.hardware
    return [("model", net.name), ("device", f"{hw.name} ({hw.product}, {hw.origin})"),
            ("training step", words.step_settings(plan)),
            ("GPU counts", ", ".join(map(str, plan.gpus))),
            ("links", words.links_text(plan)),
            ("memory per GPU", words.capacity_line(plan).removeprefix("memory per GPU ")),
            ("prediction", basis_sentence(hw).removeprefix("predicted: "))]


def _figures(plan: Plan) -> list[tuple[str, str]]:
    tried, fitting = len(plan.results), len(plan.fitting)
    best = plan.best
    pairs = [("layouts that fit, of those tried", f"{fitting} of {tried}")]
    if best is not None:
        pairs = [(f"best on {count(best.layout.gpus, 'GPU')} (the front's last)",
                  best.layout.label),
                 ("its step, predicted", seconds(best.predicted_step_s)),
                 ("its throughput, predicted",
                  si(best.predicted.tokens_per_s, words.rate_unit(plan))), *pairs]
    return pairs


def _lists(plan: Plan) -> str:
    """What the plan assumes, leaves out and warns of, each a list."""
    out = []
    for head, lines in (("Assumes", plan.assumptions), ("Left out", plan.left_out),
                        ("Warnings", words.plan_warnings(plan))):
        if lines:
            out.append(f"<h3>{head}</h3><ul class=\"notes\">"
                       + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>")
    return "".join(out)


def _count_tables(plan: Plan, top: int, prefix: str) -> tuple[str, dict[int, str]]:
    """Per GPU count, its ``top`` fastest fitting layouts as a sortable table, or why it has
    none; then the lines under the text's table. The rows' ids by ``id()`` of their
    layouts (a chart point finds its row)."""
    unit, vp = words.rate_unit(plan), words.interleaves(plan)
    names = words.layout_header(plan)
    ids: dict[int, str] = {}
    out = []
    for n in plan.gpus:
        out.append(f"<h3>{escape(count(n, 'GPU'))}</h3>")
        ranked = plan.ranked(n)
        if not ranked:
            out.append(paragraphs([words.shortfall_text(plan, n) or ""]))
            continue
        rows = []
        for index, r in enumerate(ranked[:top]):
            ids[id(r)] = row = f"{prefix}-{n}-{index}"
            rows.append((f' id="{row}" tabindex="0"',
                         _cells(words.layout_cells(r, unit, vp), names)))
        tried = sum(1 for r in plan.results if r.layout.gpus == n)
        shown = min(top, len(ranked))
        caption = (f"the {'fastest' if shown == 1 else f'{shown} fastest'} of "
                   f"{count(len(ranked), 'layout')} that fit ({tried} tried), fastest "
                   f"predicted first")
        out.append(table(_header(names), rows, caption=caption))
    out.append(paragraphs([*words.stage_lines(plan, top), *words.fit_hints(plan)]))
    return "".join(out), ids


def _front_table(plan: Plan) -> str:
    rows = [("", _cells(cells, words.FRONT_HEADER)) for cells in words.front_cells(plan)]
    return table(_header(words.FRONT_HEADER), rows)


def _best(plan: Plan) -> str:
    """The best layout in words (``output.plan.best_lines``): its step by part, its
    collectives, its pipeline's stages where it has one, its memory."""
    from ...analysis.parallel import blocks_of

    best = plan.best
    assert best is not None
    first, *more = words.best_lines(best, len(blocks_of(plan.network)))
    return (f"<p>{escape(first)}</p><ul class=\"notes\">"
            + "".join(f"<li>{escape(line.strip())}</li>" for line in more) + "</ul>")


def _chart(plan: Plan, ids: dict[int, str]) -> str:
    """Every fitting layout at its predicted step time, coloured and shaped by what bounds
    it, the front, its roofline and linear scaling from its first point (``plot.plan``'s
    chart, drawn by ``svg.plan_chart``)."""
    fitting = plan.fitting
    if not fitting:
        return ("<p class=muted>No layout fits in memory at any GPU count asked: nothing to "
                "draw.</p>")
    unit = words.rate_unit(plan)
    points = [svg.Point(r.layout.gpus, r.predicted_step_s, r.predicted.bound, False,
                        ids.get(id(r), ""), _tip(plan, r, unit)) for r in fitting]
    front = [svg.FrontPoint(r.layout.gpus, r.predicted_step_s, r.step_s, r.layout.label,
                            ids.get(id(r), ""), f"Pareto front: {_tip(plan, r, unit)}")
             for r in plan.front]
    counts = sorted({r.layout.gpus for r in fitting})
    first = front[0]  # every line in the range, as matplotlib's autoscale takes them
    ys = [p.y for p in points] + [p.roof for p in front] + [first.y * first.x / p.x
                                                            for p in front]
    bounds = [b for b in BOUNDS if any(p.bound == b for p in points)]
    key = [*((b, words.bound_key(b)) for b in bounds), ("front", words.FRONT_KEY),
           ("front-roof", words.FRONT_ROOF_KEY), ("ideal", words.IDEAL_KEY)]
    title = f"{plan.network.name} on {plan.hardware.name}: training step"
    chart = svg.plan_chart(points, front, counts, (counts[0] / 1.4, counts[-1] * 1.6),
                           (min(ys) / 1.3, max(ys) * 1.3), (words.gpus_axis(plan),
                                                            words.STEP_AXIS),
                           f"{title}, predicted step time against GPUs", key, seconds)
    basis = basis_of(plan.hardware)
    shapes = ", ".join(f"{BOUND_SYMBOLS[b]} {b}" for b in bounds)
    caption = (f"Predicted step time per global batch (on the entry's {basis} basis) against "
               f"GPUs, both axes log: each of the {len(fitting)} layouts that fit (of "
               f"{len(plan.results)} tried) a point, its shape and colour what bounds it "
               f"({shapes}); the line the Pareto front, each layout on it named; dotted, the "
               f"front's roofline step times, a lower bound; dashed, linear scaling from the "
               f"front's first point (step time x GPUs constant). Hover a point for its "
               f"figures; a click on one in the tables below finds its row.")
    return f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>"


def _body(plan: Plan, top: int, prefix: str, level: int = 1) -> tuple[str, str]:
    """The page's title and its content (ids start with ``prefix``; the title an
    ``<h{level}>``, its sections one level below)."""
    title = f"{plan.network.name} on {plan.hardware.name}: training layouts"

    def head(text: str, depth: int = 1) -> str:
        return f"<h{level + depth}>{escape(text)}</h{level + depth}>"

    layouts, ids = _count_tables(plan, top, prefix)
    front = words.front_cells(plan)
    title_of = words.layouts_title(plan, top)
    body = (head(title, 0) + facts(_facts(plan)) + figures(_figures(plan)) + _lists(plan)
            + head("Step time against GPUs") + _chart(plan, ids)
            + head(title_of[0].upper() + title_of[1:].partition(" (")[0])
            + f"<p class=muted>{escape(title_of.partition(' (')[2].removesuffix(')'))}; "
              f"predicted on the entry's {escape(basis_of(plan.hardware))} basis, the "
              f"roofline a lower bound.</p>" + layouts)
    if front:
        body += (head(words.FRONT_TITLE.partition(" (")[0])
                 + f"<p class=muted>{escape(words.FRONT_TITLE.partition(' (')[2][:-1])}.</p>"
                 + _front_table(plan)
                 + head(f"Best on {count(plan.front[-1].layout.gpus, 'GPU')}") + _best(plan))
    body += head("Sources") + hardware_sources(plan.hardware)
    return title, body


def plan_page(plan: Plan, top: int = 3, command: str | None = None) -> str:
    """plan ``--format html``: one self-contained page."""
    title, body = _body(plan, top, "p")
    return document(title, block(body + provenance(command)))


def plan_fragment(plan: Plan, top: int = 3) -> str:
    """The same block for Jupyter (``Plan._repr_html_``): its own stylesheet and script, ids
    unique in the notebook."""
    return fragment(_body(plan, top, "p" + secrets.token_hex(4), level=2)[1])
