"""Roofline charts: what is drawn (ceilings, slopes, points, labels), checked by hand-derived
numbers; files written by extension; no pyplot state touched. Agg backend, headless."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from roofline import HardwareSpec, analyze_model, load_network, network_from_yaml  # noqa: E402
from roofline.errors import PlotError, RooflineError  # noqa: E402
from roofline.plot import (  # noqa: E402
    compact_names,
    plot_batch_sweep,
    plot_roofline,
    save_plot,
)

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
SLIDE = ROOT / "examples" / "slide-amazon-670k-dense.yaml"


def by_gid(ax, gid):
    """The one artist (line, scatter or text) of ``ax`` whose gid is ``gid``."""
    found = [a for a in ax.lines + ax.collections + ax.texts if a.get_gid() == gid]
    assert len(found) == 1, f"{gid}: {len(found)} artists; gids: {gids(ax)}"
    return found[0]


def gids(ax):
    return sorted(str(a.get_gid()) for a in ax.lines + ax.collections + ax.texts)


def point_labels(ax):
    return sorted(t.get_text() for t in ax.texts if str(t.get_gid()).startswith("label:"))


def expand(label):
    """``"MM1,MM5"`` -> {MM1, MM5}; ``"MM2-MM4"`` -> {MM2, MM3, MM4}."""
    names = set()
    for piece in label.split(","):
        first, _, last = piece.partition("-")
        a, b = int(first[2:]), int((last or first)[2:])
        names |= {f"MM{i}" for i in range(a, b + 1)}
    return names


@pytest.fixture(scope="module")
def a100_512():
    return analyze_model(MLP, "a100-sxm4-80gb")


def test_a100_fp16_ceiling_at_312_and_memory_slope_through_1_and_2_039(a100_512):
    ax = plot_roofline(a100_512)
    ceiling = by_gid(ax, "roof-compute:a100-sxm4-80gb:fp16")
    assert list(ceiling.get_ydata()) == [312.0, 312.0]
    # the ceiling runs from the ridge, 312 TFLOP/s / 2.039 TB/s = 153.0 FLOP/B, to the right edge
    assert ceiling.get_xdata()[0] == pytest.approx(153.016, rel=1e-4)
    assert ceiling.get_xdata()[1] == ax.get_xlim()[1]
    slope = by_gid(ax, "roof-memory:a100-sxm4-80gb")
    # y = x * 2039 GB/s: at 1 FLOP/B that is 2.039 TFLOP/s, so y / x is 2.039 at every vertex
    for x, y in zip(slope.get_xdata(), slope.get_ydata()):
        assert y / x == pytest.approx(2.039)
    assert slope.get_xdata()[0] == ax.get_xlim()[0]
    ridge = by_gid(ax, "ridge:a100-sxm4-80gb")
    assert (ridge.get_xdata()[0], ridge.get_ydata()[0]) == pytest.approx((153.016, 312.0), 1e-4)
    assert "153 FLOP/B" in by_gid(ax, "ridge-label:a100-sxm4-80gb").get_text()


def test_axes_are_log_log_with_units(a100_512):
    ax = plot_roofline(a100_512)
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert "FLOP/byte" in ax.get_xlabel()
    assert "TFLOP/s" in ax.get_ylabel()
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    assert x0 <= 315.08 / 2 and x1 >= 315.08 * 2  # room around the points
    assert y0 <= 19.5 and y1 >= 624  # every ceiling of the entry is inside


def test_batch_512_points_are_the_five_gemms_on_the_compute_ceiling(a100_512):
    ax = plot_roofline(a100_512)
    points = by_gid(ax, "points-compute:a100-sxm4-80gb").get_offsets()
    assert len(points) == 5
    assert "points-memory:a100-sxm4-80gb" not in gids(ax)
    # MM1: 2*512*4096*1024 / (2*(512*1024 + 1024*4096 + 512*4096)) = 315.08 FLOP/B, at 312
    assert tuple(points[0]) == pytest.approx((315.077, 312.0), rel=1e-4)
    # MM2: 2*512*1000*4096 / (2*(512*4096 + 4096*1000 + 512*1000)) = 312.77 FLOP/B
    assert tuple(points[1]) == pytest.approx((312.770, 312.0), rel=1e-4)
    assert by_gid(ax, "points-compute:a100-sxm4-80gb").get_facecolor()[0][:3] == pytest.approx(
        matplotlib.colors.to_rgb("#1f77b4"))


def test_coincident_gemms_share_one_label(a100_512):
    # MM1 (512x4096x1024) and MM5 (1024x4096x512) have the same dimensions, so the same point;
    # MM2, MM3, MM4 are all {512, 1000, 4096}
    assert point_labels(plot_roofline(a100_512)) == ["MM1,MM5", "MM2-MM4"]


def test_batch_1_is_memory_bound_on_the_slope():
    report = analyze_model(MLP, "a100-sxm4-80gb", batch=1)
    ax = plot_roofline(report)
    points = by_gid(ax, "points-memory:a100-sxm4-80gb").get_offsets()
    assert len(points) == 5
    # MM1: 2*1*4096*1024 / (2*(1024 + 1024*4096 + 4096)) = 0.99878 FLOP/B -> x 2.039 TB/s
    assert tuple(points[0]) == pytest.approx((0.998781, 0.998781 * 2.039), rel=1e-5)
    red = matplotlib.colors.to_rgb("#d62728")
    assert by_gid(ax, "points-memory:a100-sxm4-80gb").get_facecolor()[0][:3] == pytest.approx(red)
    assert ax.get_xlim()[0] <= 0.99878 / 2  # the points sit a factor 2+ inside the frame


def test_other_dtypes_lighter_and_grouped_by_equal_peak(a100_512):
    ax = plot_roofline(a100_512)
    # a100-sxm4-80gb: fp64 19.5, fp32 19.5, tf32 156, fp16 312 (= bf16), int8 624
    expected = {"fp64,fp32": 19.5, "tf32": 156.0, "int8": 624.0}
    for dtypes, peak in expected.items():
        line = by_gid(ax, f"dtype-ceiling:a100-sxm4-80gb:{dtypes}")
        assert set(line.get_ydata()) == {peak}
        assert line.get_alpha() < 1 and line.get_linewidth() < 2
        # each starts on the memory slope (its own ridge) or at the left edge
        assert line.get_xdata()[0] == pytest.approx(max(ax.get_xlim()[0], peak / 2.039))
    assert not [g for g in gids(ax) if "bf16" in g]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "a100-sxm4-80gb: fp16 (= bf16) 312 TFLOP/s, 2039 GB/s" in legend
    assert {"fp64, fp32 19.5", "tf32 156", "int8 624", "fp16 312"} <= {t.get_text() for t in ax.texts}


def test_other_dtypes_can_be_left_out(a100_512):
    ax = plot_roofline(a100_512, other_dtypes=False, host_link=False, labels=False)
    assert not [g for g in gids(ax) if g.startswith(("dtype-ceiling", "host-link", "label:"))]


def test_host_link_slope_when_the_entry_has_one(a100_512):
    ax = plot_roofline(a100_512)
    link = by_gid(ax, "host-link:a100-sxm4-80gb")  # PCIe 4 x16: 31.5 GB/s per direction
    for x, y in zip(link.get_xdata(), link.get_ydata()):
        assert y / x == pytest.approx(0.0315)
    assert link.get_linestyle() == ":"
    assert any("host link (PCIe 4) 31.5 GB/s" in t.get_text()
               for t in ax.get_legend().get_texts())
    cpu = plot_roofline(analyze_model(SLIDE, "xeon-platinum-8180"))
    assert not [g for g in gids(cpu) if g.startswith("host-link")]


def test_several_hardware_entries_on_one_chart():
    reports = [analyze_model(SLIDE, hw) for hw in ("xeon-platinum-8180", "v100-sxm2-16gb")]
    ax = plot_roofline(reports)
    # fp32: Xeon 8180 (2 sockets) 8.243 TFLOP/s (2 x 28 x 2.3 GHz x 64) over 255.9 GB/s; V100 SXM2 15.7 over 900
    assert set(by_gid(ax, "roof-compute:xeon-platinum-8180:fp32").get_ydata()) == {8.243}
    assert set(by_gid(ax, "roof-compute:v100-sxm2-16gb:fp32").get_ydata()) == {15.7}
    xeon = by_gid(ax, "points-compute:xeon-platinum-8180")
    v100 = by_gid(ax, "points-compute:v100-sxm2-16gb")
    assert len(xeon.get_offsets()) == len(v100.get_offsets()) == 5
    assert xeon.get_paths()[0] != v100.get_paths()[0]  # one marker shape per entry
    assert not [g for g in gids(ax) if g.startswith("dtype-ceiling")]  # off by default here
    assert "xeon-platinum-8180 vs v100-sxm2-16gb" in ax.get_title()
    assert by_gid(ax, "roof-compute:xeon-platinum-8180:fp32").get_color() != by_gid(
        ax, "roof-compute:v100-sxm2-16gb:fp32").get_color()


def _measured_spec(theory_bandwidth=40.0):
    theoretical = {"peak_tflops": {"fp32": 1.0, "fp64": 0.5}}
    if theory_bandwidth:
        theoretical["bandwidth_gbs"] = theory_bandwidth
    return HardwareSpec.from_dict({
        "name": "local", "kind": "cpu", "vendor": "Test", "model": "Test CPU",
        "architecture": "test", "origin": "measured",
        "peak_tflops": {"fp32": 0.5, "fp64": 0.25}, "bandwidth_gbs": 20.0,
        "theoretical": theoretical,
        "cpu": {"sockets": 1, "cores_per_socket": 2, "simd_bits": 256, "fma_units": 2,
                "clock_ghz": 2.0},
        "sources": [{"title": "roofline probe", "command": "roofline probe --save local",
                     "covers": ["peak_tflops", "bandwidth_gbs", "cpu"]}],
        "notes": "measured",
    }, "test")


def test_measured_entry_draws_its_datasheet_roof_apart():
    report = analyze_model(MLP, _measured_spec(), dtype="fp32")
    ax = plot_roofline(report)
    measured = by_gid(ax, "roof-compute:local:fp32")
    sheet = by_gid(ax, "datasheet-compute:local:fp32")
    assert set(measured.get_ydata()) == {0.5}
    assert set(sheet.get_ydata()) == {1.0}
    assert sheet.get_linestyle() != measured.get_linestyle()
    assert by_gid(ax, "datasheet-memory:local").get_ydata()[-1] == 1.0
    # the measured ridge: 0.5 TFLOP/s / 20 GB/s = 25 FLOP/B; the datasheet one 1.0 / 40 = 25
    assert by_gid(ax, "ridge:local").get_xdata()[0] == pytest.approx(25.0)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "local measured: fp32 0.5 TFLOP/s, 20 GB/s" in legend
    assert "local theoretical: 1 TFLOP/s, 40 GB/s" in legend


def test_measured_diamonds_are_named_and_tied_to_their_own_gemm():
    """--measure's diamonds each carry their GEMM's name, and each is tied to its own GEMM's
    roof point, whichever GEMMs have no measured time (the tie once paired the n-th measured
    point with the n-th GEMM). The MLP in inference at batch 512 on the test entry (0.5
    TFLOP/s fp32, 20 GB/s, ridge 25 FLOP/B): MM1 512 x 4096 x 1024 not timed; MM2 512 x 1000 x
    4096, 4.194 GFLOP over 4 (512 x 4096 + 4096 x 1000 + 512 x 1000) = 26.82 MB: 156.4 FLOP/B,
    compute-bound at 0.5 TFLOP/s on the roof, timed at 10.5 ms: 4.194 / 0.0105 = 0.3995
    TFLOP/s. Its one dotted tie runs straight up at 156.4 FLOP/B from 0.3995 to 0.5."""
    import dataclasses

    from roofline.analysis.measure import Measurement

    net = load_network(MLP).with_overrides(mode="inference", batch=512)
    report = analyze_model(net, _measured_spec(), dtype="fp32")
    timed = Measurement(10.5e-3, 10.5e-3, 0.01, "numpy")
    results = [dataclasses.replace(r, measured=timed) if r.gemm.name == "MM2" else r
               for r in report.results]
    assert [r.gemm.name for r in results] == ["MM1", "MM2"]
    ax = plot_roofline(dataclasses.replace(report, results=results))
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "label-measured:local"]
    assert labels == ["MM2"]
    tie = by_gid(ax, "measured-to-roof:local")
    intensity = 2 * 512 * 1000 * 4096 / (4 * (512 * 4096 + 4096 * 1000 + 512 * 1000))
    assert intensity == pytest.approx(156.4, abs=0.05)
    assert list(tie.get_xdata()) == pytest.approx([intensity, intensity])
    assert sorted(tie.get_ydata()) == pytest.approx([0.3995, 0.5], rel=1e-3)


def test_theoretical_roof_without_a_known_bandwidth_says_so():
    # a probe cannot see DRAM channels without root: the theoretical slope is the measured one
    report = analyze_model(MLP, _measured_spec(theory_bandwidth=None), dtype="fp32")
    ax = plot_roofline(report)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "local theoretical: 1 TFLOP/s, bandwidth not known" in legend
    assert by_gid(ax, "datasheet-memory:local").get_ydata()[-1] == 1.0


TEN_LAYERS = [
    "mlp: [1024, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 1000]",
    "mlp: [784, 2048, 1024, 512, 4096, 256, 1000, 8192, 512, 300, 10]",
    "mlp: [135909, 128, 1024, 128, 4096, 128, 2048, 128, 512, 128, 670091]",
]


def _boxes_overlap(a, b):
    return a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5


@pytest.mark.parametrize("layers", TEN_LAYERS)
@pytest.mark.parametrize("hw,batch", [("a100-sxm4-80gb", 512), ("v100-sxm2-16gb", 24)])
def test_ten_layer_labels_cover_every_gemm_and_never_overlap(layers, hw, batch):
    network = network_from_yaml(f"batch: {batch}\ndtype: fp16\n{layers}\n")
    report = analyze_model(network, hw)
    ax = plot_roofline(report)
    labels = point_labels(ax)
    names = [expand(label) for label in labels]
    assert set().union(*names) == {r.gemm.name for r in report.results}  # 29 GEMMs
    assert sum(len(n) for n in names) == 29  # each in exactly one label
    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = [t for t in ax.texts if t.get_text()]
    # the text itself, not the leader line an Annotation's own extent would include
    boxes = [Text.get_window_extent(t, renderer) for t in texts]
    frame = ax.get_window_extent(renderer)
    for text, box in zip(texts, boxes):
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, text.get_text()
        assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, text.get_text()
    for (ta, a), (tb, b) in itertools.combinations(zip(texts, boxes), 2):
        assert not _boxes_overlap(a, b), (ta.get_text(), tb.get_text())


def test_labels_are_deterministic(a100_512):
    def positions():
        ax = plot_roofline(analyze_model(network_from_yaml(TEN_LAYERS[1].join(
            ["batch: 64\ndtype: fp16\n", "\n"])), "a100-sxm4-80gb"))
        return [(t.get_text(), t.xyann) for t in ax.texts]

    assert positions() == positions()


@pytest.mark.parametrize("names,label", [
    (["MM1"], "MM1"),
    (["MM1", "MM5"], "MM1,MM5"),
    (["MM4", "MM2", "MM3"], "MM2-MM4"),
    (["MM1", "MM2", "MM5", "MM6", "MM7"], "MM1,MM2,MM5-MM7"),
    (["MM1", "MM3", "MM5", "MM7", "MM9", "MM11"], "MM1,MM3,MM5,+3"),
    (["fc1", "fc2"], "fc1,fc2"),
])
def test_compact_names(names, label):
    assert compact_names(names) == label


def test_an_axes_passed_in_is_drawn_on_and_returned(a100_512):
    figure = Figure()
    ax = figure.add_subplot()
    assert plot_roofline(a100_512, ax=ax) is ax
    assert a100_512.plot(ax=ax) is ax
    assert len(figure.axes) == 1


def test_no_pyplot_and_no_matplotlib_on_import(tmp_path):
    code = (
        "import sys, roofline\n"
        "assert 'matplotlib' not in sys.modules, 'import roofline imported matplotlib'\n"
        "from roofline.plot import save_plot\n"
        f"r = roofline.analyze_model({str(MLP)!r}, 'a100')\n"
        f"save_plot([r], {str(tmp_path / 'a.png')!r})\n"
        "ax = r.plot()\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'\n"
        "print(type(ax.figure).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg"}, timeout=120,
                          cwd=tmp_path)  # not the checkout, whose roofline/ lacks hwdb
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "RooflineFigure"


def test_chart_data_and_the_face_import_no_matplotlib(tmp_path):
    """``roofline.plot`` and its ``data`` module (what is drawn, as numbers) need no matplotlib:
    the axis ranges and point groups of a chart come without it."""
    code = (
        "import sys, roofline, roofline.plot\n"
        "from roofline.plot.data import chart_limits, gemm_groups\n"
        f"r = roofline.analyze_model({str(MLP)!r}, 'a100', batch=512)\n"
        "(x0, x1), (y0, y1) = chart_limits([r], other_dtypes=True)\n"
        "assert x0 < min(g.x for g in gemm_groups(r)) and y1 > 312, (x0, y1)\n"
        "assert 'matplotlib' not in sys.modules, 'chart data imported matplotlib'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_report_plot_figure_displays_inline_as_png(a100_512):
    ax = a100_512.plot()
    png = ax.figure._repr_png_()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize("suffix,magic", [
    (".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF"), (".PNG", b"\x89PNG"),
])
def test_save_plot_writes_by_extension(tmp_path, a100_512, suffix, magic):
    path = tmp_path / f"chart{suffix}"
    assert save_plot([a100_512], path) == path
    assert path.read_bytes().startswith(magic)


@pytest.mark.parametrize("name", ["chart.gif", "chart.jpg", "chart"])
def test_save_plot_rejects_other_extensions(tmp_path, a100_512, name):
    with pytest.raises(PlotError, match=r"\.png, \.svg or \.pdf"):
        save_plot(a100_512, tmp_path / name)
    assert issubclass(PlotError, RooflineError)
    assert not (tmp_path / name).exists()


def test_save_plot_into_a_missing_folder_is_a_plot_error(tmp_path, a100_512):
    with pytest.raises(PlotError, match="does not exist"):
        save_plot(a100_512, tmp_path / "nope" / "chart.png")


def test_cli_plot_writes_png(invoke, tmp_path):
    path = tmp_path / "roof.png"
    result = invoke("analyze", MLP, "--hw", "a100", "--hw", "v100-sxm2-16gb", "--batch", "176",
                    "--plot", path)
    assert result.exit_code == 0
    assert path.read_bytes().startswith(b"\x89PNG")
    assert f"wrote {path}" in result.stderr


def test_cli_bad_plot_extension_exits_2_before_analysis(invoke, tmp_path):
    result = invoke("analyze", MLP, "--hw", "a100", "--plot", tmp_path / "roof.gif")
    assert result.exit_code == 2
    assert "roof.gif: cannot write a plot with '.gif'; use a file name ending in .png" \
        in result.stderr
    assert result.stdout == ""  # rejected before the table was printed
    assert "Traceback" not in result.output


def test_batch_sweep_lines_and_ridge():
    batches = [1, 8, 64, 256, 1024]
    reports = [analyze_model(MLP, "a100-sxm4-80gb", batch=b) for b in batches]
    ax = plot_batch_sweep(reports)
    lines = {line.get_label(): line for line in ax.lines if str(line.get_gid()).startswith("sweep:")}
    assert sorted(lines) == ["MM1,MM5", "MM2-MM4"]
    mm1 = lines["MM1,MM5"]
    assert list(mm1.get_xdata()) == batches
    # intensity of (B, 4096, 1024) in fp16: B*4096*1024 / (B*1024 + 1024*4096 + B*4096)
    expected = [b * 4096 * 1024 / (b * 1024 + 4096 * 1024 + b * 4096) for b in batches]
    assert list(mm1.get_ydata()) == pytest.approx(expected)
    ridge = by_gid(ax, "sweep-intensity-limit")
    assert list(ridge.get_ydata()) == pytest.approx([312 / 2.039] * 2)
    attainable = plot_batch_sweep(reports, metric="attainable")
    mm1 = [li for li in attainable.lines if li.get_label() == "MM1,MM5"][0]
    assert list(mm1.get_ydata()) == pytest.approx([min(312.0, 2.039 * i) for i in expected])
    assert set(by_gid(attainable, "sweep-attainable-limit").get_ydata()) == {312.0}


def test_batch_sweep_rejects_mixed_hardware_and_unknown_metric():
    reports = [analyze_model(MLP, hw) for hw in ("a100", "v100-sxm2-16gb")]
    with pytest.raises(PlotError, match="one hardware entry"):
        plot_batch_sweep(reports)
    with pytest.raises(PlotError, match="unknown metric"):
        plot_batch_sweep(reports[:1], metric="time")


def test_a_sweep_chart_with_nothing_to_draw_is_one_line(invoke, tmp_path):
    """A step of one layer norm: no GEMM, and its op's intensity the same at every batch
    (FLOPs and bytes both grow with it), so nothing for the chart's curves. ``min()`` of no
    values was a ValueError traceback after the table; now one line, exit 2."""
    model = tmp_path / "ops.yaml"
    model.write_text("name: ops-only\ndtype: fp16\nmode: inference\n"
                     "layers:\n  - {type: norm, dim: 1024, name: ln}\n")
    result = invoke("sweep", model, "--hw", "h100", "--batch", "1,8", "--plot",
                    tmp_path / "sweep.png")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: nothing to draw: the step has no GEMM, and no op whose value the batch moves "
        "(its table holds every point)")
    assert not (tmp_path / "sweep.png").exists()


def test_ridge_of_a_chart_matches_the_report(a100_512):
    ax = plot_roofline(a100_512)
    assert by_gid(ax, "ridge:a100-sxm4-80gb").get_xdata()[0] == pytest.approx(a100_512.ridge)
    assert math.isclose(a100_512.ridge, 312 / 2.039, rel_tol=1e-12)


def test_a_chart_says_which_ops_have_no_place_on_it():
    # Llama-2-7B's embedding gather and its copy of the new K and V into the cache move bytes
    # and do no FLOP (fp16): no place on a log axis
    llama = analyze_model(ROOT / "examples" / "hf" / "llama-2-7b.json", "h100", batch=1,
                          seq=2048, mode="inference")
    assert plot_roofline(llama).get_xlabel() == (
        "arithmetic intensity (FLOP/byte)\n2 ops without FLOPs (embedding-gather, "
        "kv-cache-write) have no place on the chart.")
    assert plot_roofline(analyze_model(MLP, "a100")).get_xlabel() == (
        "arithmetic intensity (FLOP/byte)")


def test_each_devices_predicted_points_take_its_marker():
    # two devices: the A100's predictions hollow circles, the V100's hollow squares
    a100, v100 = (analyze_model(MLP, hw, batch=176) for hw in ("a100", "v100-sxm2-16gb"))
    ax = plot_roofline([a100, v100])
    names = [c.get_label() for c in ax.collections if str(c.get_gid()).startswith("points-pre")]
    assert names == ["predicted time (fitted) (a100-sxm4-80gb)",
                     "predicted time (fitted) (v100-sxm2-16gb)"]
    paths = [by_gid(ax, f"points-predicted:{hw}").get_paths()[0] for hw in
             ("a100-sxm4-80gb", "v100-sxm2-16gb")]
    assert len(paths[0].vertices) != len(paths[1].vertices)  # a circle, a square


def test_points_that_draw_as_one_take_one_label():
    # ResNet-50's batch norms: each layer's a few parts in 10^4 apart in intensity (its
    # per-channel statistics), one point on the chart; they were labelled 4-5 times each
    report = analyze_model(ROOT / "examples" / "resnet50.yaml", "a100")
    texts = [t.get_text() for t in plot_roofline(report).texts
             if str(t.get_gid()).startswith("label:")]
    assert [t for t in texts if "batchnorm" in t] == ["batchnorm,batchnorm-backward"]


def test_a_bare_host_link_bandwidth_is_named_once_in_the_legend(a100_512):
    from roofline.analysis.scaling import scale

    ax = plot_roofline(scale(a100_512, host_link="12.5"))
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "a100-sxm4-80gb: host link 12.5 GB/s" in texts, texts  # not "(host link)"


def test_a_plot_path_ending_in_a_separator_is_refused_before_any_work(tmp_path, invoke,
                                                                      monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = invoke("gemm", "64", "64", "64", "--hw", "a100", "--plot", "x.png/")
    assert result.exit_code == 2
    assert result.stderr == ("Error: 'x.png/' ends in a path separator, a directory's path: "
                             "give a file name ending in .png, .svg or .pdf\n")
    assert result.stdout == ""
    assert list(work.iterdir()) == []  # no file x.png


def test_labels_of_layers_repeated_unlike_often_say_how_many_in_all():
    """Alike GEMMs of two repeated layers, 3 dense blocks ``a`` and 5 blocks of experts ``b``
    (as DeepSeek-V3's 3 dense and 58 sparse blocks, whose attention is the same GEMMs), share a
    point and a curve; no one count says what it stands for: not ``x5``, the most the copy
    numbers reach (each layer numbers its own copies from 0), nor ``x8``, as if each name were
    8 GEMMs, but ``(8 in all)``: a.1.qkv (MM1) 3 times, b.1.qkv (MM13: a's 3 copies of 4 GEMMs
    come first) 5 times. Each layer numbers 4 GEMMs a copy (qkv, proj, then the FFN's two, or
    the router and the experts' two). The dense FFN's two GEMMs, 512 x 2048 and 2048 x 512
    (alike in intensity), are 3 copies each: ``x3``; b's two expert GEMMs ``x5``; a decode
    step's flash attention, one op a block: 8 in all."""
    from roofline.analysis.whatif import sweep
    from roofline.plot.data import gemm_groups, op_sweep_series, sweep_series

    net = network_from_yaml(
        "dtype: bf16\nseq: 256\nmode: inference\nphase: decode\nlayers:\n"
        "  - {type: transformer, name: a, hidden: 512, heads: 8, ffn: 2048, causal: true, "
        "repeat: 3}\n"
        "  - {type: transformer, name: b, hidden: 512, heads: 8, ffn: 1024, experts: 8, "
        "top_k: 2, causal: true, repeat: 5}\n")
    s = sweep(net, "h100", batches=[1, 16, 256])
    labels = {curve.label for curve, _ in sweep_series(s.reports, "intensity")}
    assert {"MM1,MM13 (8 in all)", "MM2,MM14 (8 in all)", "MM3,MM4 x3",
            "MM16,MM17 x5"} <= labels
    assert [label for label, _ in op_sweep_series(s.reports, "intensity")] == [
        "flash-attention (8 in all) (op)"]
    points = {g.label for g in gemm_groups(analyze_model(net, "h100", batch=16))}
    assert {"MM1,MM13 (8 in all)", "MM2,MM14 (8 in all)", "MM3,MM4 x3"} <= points
