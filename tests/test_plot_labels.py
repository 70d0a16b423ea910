"""Chart polish, read off the rendered chart: on a six-device roofline no two labels overlap and
no label runs through a drawn line (roofs, ridge lines, host links), at batches from 1 to 4096;
a column of GEMM points is labelled once, not once per device; two roofs at one height get one
ceiling label."""

from __future__ import annotations

import itertools

import pytest

from roofline import analyze_model

SIX = ("v100-sxm2-16gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "l4", "v100-sxm2-32gb",
       "a100-sxm4-40gb")


# Each batch is six reports and a drawn chart (~0.5 s); the default run keeps the README's batch,
# the slow group (pytest -m slow) sweeps the rest.
BATCHES = [176] + [pytest.param(b, marks=pytest.mark.slow) for b in (1, 8, 64, 512, 4096)]


@pytest.fixture(scope="module", params=BATCHES)
def six_device_chart(request):
    from roofline.plot import plot_roofline

    reports = [analyze_model("examples/mlp-1024-4096-1000.yaml", hw, batch=request.param)
               for hw in SIX]
    ax = plot_roofline(reports)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = [t for t in ax.texts if t.get_text()]
    return ax, renderer, texts


def _segments(line, ax):
    points = ax.transData.transform(line.get_xydata())
    return list(zip(points[:-1], points[1:]))


def test_labels_do_not_overlap_each_other(six_device_chart):
    _ax, renderer, texts = six_device_chart
    # an Annotation's extent includes its leader line: leaders may not cross labels either
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    kinds = {str(t.get_gid()).split(":")[0] for t in texts}
    assert kinds == {"label", "ridge-label", "ceiling-label"}
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"


def test_labels_do_not_cross_lines(six_device_chart):
    from roofline.plot.labels import crosses

    ax, renderer, texts = six_device_chart
    lines = [line for line in ax.lines if len(line.get_xydata()) > 1]
    for text in texts:
        box = text.get_window_extent(renderer)
        extents = (box.x0 + 1, box.y0 + 1, box.x1 - 1, box.y1 - 1)
        for line in lines:
            for (x0, y0), (x1, y1) in _segments(line, ax):
                assert not crosses(extents, (x0, y0, x1, y1), pad=0), (
                    f"{text.get_text()!r} crosses {line.get_gid()}")


def test_each_gemm_is_named_once_on_the_chart_of_six_devices(six_device_chart):
    from roofline.output.report import compact_names

    _ax, _renderer, texts = six_device_chart
    labels = [t.get_text() for t in texts if t.get_gid() == "label:all"]
    assert 1 <= len(labels) <= 2  # one or two columns of points (MM1,MM5 and MM2-MM4), not 12
    names = [n for label in labels for n in _expand(label)]
    assert sorted(names) == ["MM1", "MM2", "MM3", "MM4", "MM5"]
    assert compact_names(names) == "MM1-MM5"


def _expand(label):
    """``"MM1,MM5"`` -> [MM1, MM5]; ``"MM2-MM4"`` -> [MM2, MM3, MM4]."""
    names = []
    for piece in label.split(","):
        first, _, last = piece.partition("-")
        names += [f"MM{i}" for i in range(int(first[2:]), int((last or first)[2:]) + 1)]
    return names


def test_equal_ceilings_are_labelled_once_and_coincident_roofs_differ(six_device_chart):
    ax, _renderer, texts = six_device_chart
    labels = [t.get_text() for t in texts]
    assert labels.count("fp16 125") == 1  # V100 16 GB and 32 GB share 125 TFLOP/s
    # the 32 GB V100's roof lies on the 16 GB one: drawn dashed so both show
    styles = {line.get_gid(): line.get_linestyle() for line in ax.lines}
    assert styles["roof-compute:v100-sxm2-16gb:fp16"] == "-"
    assert styles["roof-compute:v100-sxm2-32gb:fp16"] == "--"


def test_legend_sits_below_the_chart_not_beside_it(six_device_chart):
    ax, renderer, _texts = six_device_chart
    legend = ax.get_legend().get_window_extent(renderer)
    frame = ax.get_window_extent(renderer)
    assert legend.y1 < frame.y0 and legend.width <= frame.width * 1.05


def test_a_memory_bound_points_label_stays_left_of_its_ridge():
    # one A100 at batch 176: MM1 and MM5 (176 x 4096 x 1024 fp16: 1,476,395,008 FLOPs over
    # 10,190,848 bytes, 144.9 FLOP/B) sit just under the ridge, 312 TFLOP/s / 2039 GB/s = 153.0;
    # their label once landed right of the ridge line, beside the compute ceiling, where it
    # read as a compute-bound point's
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from roofline.plot import plot_roofline
    from roofline.plot.labels import across

    report = analyze_model("examples/mlp-1024-4096-1000.yaml", "a100-sxm4-80gb", batch=176)
    ax = plot_roofline([report])
    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    ridge_x = ax.transData.transform((312e12 / 2039e9, 1.0))[0]
    labels = [t for t in ax.texts if str(t.get_gid()).startswith("label:")]
    assert {t.get_text() for t in labels} >= {"MM1,MM5"}
    for label in labels:
        box = Text.get_window_extent(label, canvas.get_renderer())  # the text, not its leader
        assert (box.x0 + box.x1) / 2 < ridge_x, label.get_text()
    # the rule itself: a box across a wall from its point, beside the wall's span
    assert across(10.0, (30.0, 5.0, 50.0, 15.0), (20.0, 0.0, 20.0, 100.0))
    assert not across(10.0, (30.0, 105.0, 50.0, 115.0), (20.0, 0.0, 20.0, 100.0))
    assert not across(10.0, (0.0, 5.0, 15.0, 15.0), (20.0, 0.0, 20.0, 100.0))


def test_no_leader_line_runs_through_another_label():
    # Llama-2-7B's training step on an H100: 13 labels, several far from their points (their
    # GEMMs crowd the ceiling); a leader once ran through "embedding-scatter-add" and three
    # met inside "MM2,MM384,MM385 x32". Each leader, from its text's middle to its point,
    # now crosses no other label's text, and a label set apart from its point has one
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from roofline.plot import plot_roofline
    from roofline.plot.labels import LEADER_GAP, crosses

    report = analyze_model("examples/hf/llama-2-7b.json", "h100-sxm5-80gb", batch=8, seq=2048)
    ax = plot_roofline([report])
    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    labels = [t for t in ax.texts if str(t.get_gid()).startswith("label:")]
    boxes = {id(t): Text.get_window_extent(t, renderer) for t in labels}
    for label in labels:
        box = boxes[id(label)]
        px, py = ax.transData.transform(label.xy)
        gap_x = max(0.0, box.x0 - px, px - box.x1)
        gap_y = max(0.0, box.y0 - py, py - box.y1)
        if label.arrow_patch is None:  # beside its point: no gap a reader must bridge
            assert gap_x <= LEADER_GAP + 1 and gap_y <= LEADER_GAP + 1, label.get_text()
            continue
        line = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, px, py)
        for other in labels:
            if other is not label:
                b = boxes[id(other)]
                assert not crosses((b.x0, b.y0, b.x1, b.y1), line, pad=0), (
                    f"{label.get_text()!r}'s leader crosses {other.get_text()!r}")
