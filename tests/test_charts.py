"""What the sweep, compare and plan charts draw says what it is: the does-not-fit shading starts
past the last batch that fits, the compare bars are named the roofline's step time beside the
predicted one, and a log axis is labelled in plain numbers however narrow its range."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline.analysis.whatif import sweep  # noqa: E402
from roofline.output.fit_bands import no_fit_span  # noqa: E402
from roofline.units import seconds, times  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "examples" / "hf" / "llama-2-7b.json"
MIXTRAL = ROOT / "examples" / "hf" / "mixtral-8x7b.json"


def _patch(ax, gid):
    found = [p for p in ax.patches if p.get_gid() == gid]
    assert len(found) == 1, [p.get_gid() for p in ax.patches]
    return found[0]


def test_the_no_fit_span_starts_between_the_last_that_fits_and_the_next():
    xs = [1, 2, 4, 8, 16]
    assert no_fit_span(xs, 2) == (2.5, 24)  # batch 2 fits, 3 does not
    assert no_fit_span(xs, 5) == (5.5, 24)  # between two swept batches: at its own limit
    assert no_fit_span(xs, 0) == (1 / 1.5, 24)  # none fits: from before the first point
    assert no_fit_span(xs, 16) is None and no_fit_span(xs, 20) is None


def test_a_sweep_shades_past_the_last_batch_that_fits():
    # Llama-2-7B training at seq 4096 on an H100 fits batch 2 (the table says so): the shading
    # began at 2, on its point, under "batch > 2"
    s = sweep(LLAMA, "h100", [1, 2, 4, 8, 16], seqs=[4096], mode="train")
    assert s.max_batch == 2
    shade = _patch(s.plot(), "sweep-no-fit")
    assert shade.get_x() == 2.5 and shade.get_x() + shade.get_width() == 24
    assert shade.get_label() == "does not fit in memory (batch > 2)"


def test_a_sweep_where_no_batch_fits_says_so():
    # Mixtral-8x7B's 93 GB of weights on an 80 GB H100: the label read "batch > 0"
    s = sweep(MIXTRAL, "h100", [1, 2, 4], seqs=[4096], mode="inference", phase="decode")
    assert s.max_batch == 0
    shade = _patch(s.plot(), "sweep-no-fit")
    assert shade.get_label() == "does not fit in memory (no batch fits)"
    assert shade.get_x() == pytest.approx(1 / 1.5)


def test_a_seq_sweep_past_the_context_says_which_steps_do_not_fit_in_memory_either():
    # Llama-2-7B decoding at batch 8 on an H100 (85 GB): past its 4,096-token context every
    # seq is shaded as such; at 32,768 its KV cache alone is 2 x 32 layers x 4,096 x 32,768 x
    # 8 x 2 B = 137 GB, beside 13.5 GB of weights: shaded darker, from just before that point
    # (at 16,384 the cache is 68.7 GB: 82 GB in all, which fits)
    s = sweep(LLAMA, "h100", [8], seqs=[4096, 8192, 16384, 32768], mode="inference",
              phase="decode")
    ax = s.plot()
    assert _patch(ax, "sweep-no-fit").get_label() == "past the model's context (seq > 4096)"
    darker = _patch(ax, "sweep-no-memory")
    assert darker.get_label() == "does not fit in memory either (from seq 32,768)"
    assert darker.get_x() == pytest.approx(32768 / 1.15)
    assert [r.memory.fits for r in s.reports] == [True, True, True, False]


def _compare_chart(devices, **overrides):
    from roofline.analysis.whatif import compare

    c = compare(ROOT / "examples" / "mlp-1024-4096-1000.yaml", devices, **overrides)
    return c, c.plot()


def test_the_compare_bars_are_named_the_roofline_and_the_prediction_is_drawn():
    c, ax = _compare_chart(["a100", "h100"])
    assert "roofline step time by device" in ax.get_title()
    assert ax.get_xlabel().startswith("roofline step time (us), a lower bound; speedup over")
    labels = ax.get_legend().get_texts()
    assert [t.get_text() for t in labels] == [
        "memory-bound roofline time (GEMMs and other ops)",
        "compute-bound roofline time (GEMMs and other ops)",
        "predicted step time (each device's own basis)"]
    # one diamond a device, at its predicted time (in us) on its bar's row (the baseline on top)
    marks = [a for a in ax.collections if a.get_gid() == "predicted-step"]
    assert len(marks) == 1
    predicted = [r.totals["predicted_time_s"] * 1e6 for r in c.reports]
    assert marks[0].get_offsets().ravel().tolist() == pytest.approx(
        [predicted[0], 1, predicted[1], 0])
    # the axis holds the further of each bar and diamond, with room for the labels
    assert ax.get_xlim()[1] == pytest.approx(max(predicted) * 1.45)
    a100 = next(t for t in ax.texts if t.get_gid() == "bar-label:a100-sxm4-80gb")
    h100 = next(t for t in ax.texts if t.get_gid() == "bar-label:h100-sxm5-80gb")
    assert a100.get_text() == (f"roofline {seconds(c.reports[0].totals['time_s'])}  1.00x\n"
                               f"predicted {seconds(c.reports[0].totals['predicted_time_s'])}"
                               f"  1.00x")
    assert h100.get_text().splitlines()[1] == (
        f"predicted {seconds(c.reports[1].totals['predicted_time_s'])}  "
        f"{times(c.predicted_speedup(c.reports[1]))}")


def test_a_datasheet_device_has_no_predicted_diamond():
    # a Xeon's datasheet entry predicts nothing beyond its roofline: no diamond, no line, and
    # the others' predicted speedups (against it) are left out; its 26x span draws a log axis
    c, ax = _compare_chart(["xeon-platinum-8380", "a100", "h100"])
    assert ax.get_xscale() == "log"
    (marks,) = [a for a in ax.collections if a.get_gid() == "predicted-step"]
    assert [row for _, row in marks.get_offsets().tolist()] == [1, 0]  # a100, h100
    xeon = next(t for t in ax.texts if t.get_gid() == "bar-label:xeon-platinum-8380")
    assert "\n" not in xeon.get_text() and xeon.get_text().startswith("roofline ")
    a100 = next(t for t in ax.texts if t.get_gid() == "bar-label:a100-sxm4-80gb")
    assert a100.get_text().splitlines()[1] == (
        f"predicted {seconds(c.reports[1].totals['predicted_time_s'])}")


@pytest.mark.parametrize("low, high, ticks", [
    (1, 1000, [1, 10, 100, 1000]),  # three decades and more: decades
    (0.6, 400, [1, 10, 100]),
    (197, 5250, [200, 500, 1000, 2000, 5000]),  # under two decades: 1-2-5 (decades: 1000 alone)
    (2.9, 17, [3, 5, 10]),  # 1-2-5 gives two: 1-2-3-5
    (0.25, 0.9, [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]),  # every digit, written as typed
    (2.1, 4.9, [3, 4]),  # the finest gives two: those
    (1123, 1187, [1130, 1180]),  # none: the ends, rounded inwards to three digits
])
def test_a_log_axis_is_labelled_however_narrow(low, high, ticks):
    from roofline.units import log_ticks

    assert log_ticks(low, high) == ticks


def _labels(axis):
    """The labels of ``axis``'s major ticks inside its limits, as drawn."""
    low, high = sorted(axis.get_view_interval())
    format_ = axis.get_major_formatter()
    return [format_(v, i) for i, v in enumerate(axis.get_major_locator()())
            if low <= v <= high]


def test_a_narrow_sweep_chart_labels_its_y_axis_in_plain_steps():
    # Llama-2-7B training at seq 4096: intensities 1,300-3,600 FLOP/B and the ridge at 295,
    # so y runs 295 / 1.5 = 197 to about 5,300: one decade's label ("1000") before
    s = sweep(LLAMA, "h100", [1, 2, 4, 8, 16], seqs=[4096], mode="train")
    ax = s.plot()
    assert _labels(ax.yaxis) == ["200", "500", "1000", "2000", "5000"]
    assert not any(ax.yaxis.get_minor_formatter()(v, 0) for v in (300, 3000))


def test_the_plan_chart_labels_its_step_times_with_their_unit():
    # Llama-2-7B's front at 8 and 16 H100s: 7.86 s and 3.93 s predicted, its roofline down to
    # 3.21 s; matplotlib's margins make the axis 3.07 to 8.22 s, where decades put no label,
    # 1-2-5 and 1-2-3-5 one (5): every second from 4 to 8 (labelled "4x10^0", "6x10^0" before)
    from roofline.analysis.plan import make_fabric, plan_layouts
    from roofline.hardware.catalog import load_hardware
    from roofline.model.network import load_network
    from roofline.plot import plot_plan

    h100 = load_hardware("h100")
    net = load_network(LLAMA).with_overrides(batch=256, seq=4096, mode="train")
    plan = plan_layouts(net, h100, (8, 16), 256, make_fabric(h100), tp=(1,), pp=(1,),
                        zero=(1,), micro_batch=(2,))
    ax = plot_plan(plan)
    assert [r.layout.gpus for r in plan.front] == [8, 16]
    assert ax.get_ylabel() == "predicted step time per global batch"
    low, high = sorted(ax.get_ylim())
    assert 3 < low < 3.2 and 7.9 < high < 9
    assert _labels(ax.yaxis) == ["4 s", "5 s", "6 s", "7 s", "8 s"]


def test_the_plan_chart_says_which_gpu_counts_no_layout_fits():
    # Llama-2-7B on 1 H100 (85 GB) in mixed-precision Adam: 16 B a parameter, 6.74 G
    # parameters, 108 GB before any activation: no layout fits at 1 GPU, which had no point
    # and no word on the chart (the text said so)
    from roofline.analysis.plan import make_fabric, plan_layouts
    from roofline.hardware.catalog import load_hardware
    from roofline.model.network import load_network
    from roofline.plot import plot_plan

    h100 = load_hardware("h100")
    net = load_network(LLAMA).with_overrides(batch=16, seq=4096, mode="train",
                                             optimizer="adam")
    plan = plan_layouts(net, h100, (1, 2), 16, make_fabric(h100), tp=(1,), pp=(1,),
                        zero=(0, 1, 2), micro_batch=(1,))
    assert [r.layout.gpus for r in plan.fitting] and all(
        r.layout.gpus == 2 for r in plan.fitting)
    ax = plot_plan(plan)
    assert ax.get_xlabel() == "GPUs (no layout fits in memory at 1)"


def test_a_long_seq_sweep_labels_the_ticks_its_labels_leave_room_for():
    """A seq sweep 1..2^20 (21 ticks, one a power of two) ran its labels into each other from
    8192 on, and wrote 1048576 as 1.04858e+06: each tick is labelled whole where its label
    clears the last one labelled, the largest always. Drawn, no two labels overlap; a batch
    sweep 1..4096 (13 ticks, four digits at most) keeps every label."""
    mlp = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
    short = sweep(mlp, "h100", "1..4096").plot()
    assert _labels(short.xaxis) == [str(2**i) for i in range(13)]
    ax = sweep(LLAMA, "h100", [1], seqs="1..1048576", mode="inference", phase="decode").plot()
    shown = [label for label in _labels(ax.xaxis) if label]
    assert shown[:4] == ["1", "2", "4", "8"] and shown[-1] == "1048576"
    assert len(shown) < 21
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    boxes = [t.get_window_extent(canvas.get_renderer()) for t in ax.get_xticklabels()
             if t.get_text()]
    assert len(boxes) == len(shown)
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))
