"""The roofline chart: each device's roof (memory slope, ridge, compute ceiling), its other
dtypes' ceilings, its host link, and the GEMMs and ops as points coloured by bound, every label
placed clear of the others and of every drawn line (``labels.Placer``).

Units: arithmetic intensity in FLOP/byte on x, throughput in TFLOP/s on y, both log scale. Every
drawn element carries a ``gid`` (``"roof-compute:a100-sxm4-80gb:fp16"``,
``"points-memory:v100-sxm2-16gb"``...) so tests and users can find it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..model.repeats import distinct
from ..units import rate_unit, three_digits
from .data import (
    Group,
    Range,
    Roof,
    as_reports,
    chart_limits,
    datasheet_roof,
    gemm_groups,
    main_dtypes,
    main_roof,
    op_groups,
    other_ceilings,
    stream_point,
    timed_points,
)
from .figure import legend_below, new_axes
from .labels import Placer, ceiling_offsets, needs_leader, point_label_offsets, ridge_offsets
from .style import BOUND_COLORS, HARDWARE_COLORS, LABEL_SIZE, MARKERS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.report import Report
    from ..hardware.spec import HardwareSpec


def plot_roofline(reports: Report | Sequence[Report], ax: Axes | None = None, *,
                  other_dtypes: bool | None = None, host_link: bool = True,
                  labels: bool = True) -> Axes:
    """Draw one Report, or several (one per hardware entry, to compare), on ``ax``.

    Each entry gets its roof (the memory slope up to the ridge, marked, then the compute
    ceiling of the report's dtype), lighter ceilings for its other dtypes (``other_dtypes``;
    by default only when one report is drawn), its host-link slope when the entry has one
    (dotted), and for a measured entry the theoretical roof (dash-dot) beside the measured one.
    Each GEMM is a point coloured by bound, labelled with its name; coincident GEMMs share
    one label (``MM1,MM5``), with several devices each column of points has one label
    (``_label_points``), and labels are placed so that none overlaps another or crosses a
    drawn line. Returns the Axes; without ``ax`` a new figure is made (see ``new_axes``).
    """
    items = as_reports(reports)
    ax = ax if ax is not None else new_axes()
    other_dtypes = len(items) == 1 if other_dtypes is None else other_dtypes
    xlim, ylim = chart_limits(items, other_dtypes)
    _setup_axes(ax, xlim, ylim, _title(items))
    placer = Placer(ax)
    for report in items:
        _block_markers(placer, report, ylim[0])
        _block_lines(placer, report, xlim, other_dtypes, host_link)
    for index, report in enumerate(items):
        color = HARDWARE_COLORS[index % len(HARDWARE_COLORS)]
        _draw_roofs(ax, report, color, other_dtypes, host_link, placer)
    for index, report in enumerate(items):
        suffix = f" ({report.hardware.name})" if len(items) > 1 else ""
        _draw_points(ax, report, MARKERS[index % len(MARKERS)], suffix)
        _draw_time_points(ax, report, MARKERS[index % len(MARKERS)], suffix)
    if labels:
        _label_points(ax, items, placer)
        _label_measured(ax, items, placer)
    left_out = max(([r.op.kind for r in distinct(report.ops) if not r.op.flops]
                    for report in items), key=len)
    if left_out:  # said under the axis, where no point or label can be
        from ..output.report import no_place_text

        ax.set_xlabel(f"{ax.get_xlabel()}\n{no_place_text(left_out)}")
    legend_below(ax)
    return ax


def _title(reports: Sequence[Report]) -> str:
    from ..output.precision import precision_text
    from ..output.report import step_text
    from ..output.serving_tp import shard_words

    names = list(dict.fromkeys(r.network.name for r in reports))
    hardware = " vs ".join(dict.fromkeys(r.hardware.name + shard_words(r) for r in reports))
    precision = " | ".join(dict.fromkeys(precision_text(r.network) for r in reports))
    steps = " | ".join(dict.fromkeys(step_text(r.network) for r in reports))
    return f"{' / '.join(names)} on {hardware}, {steps}\n{precision}"


def _setup_axes(ax: Axes, xlim: Range, ylim: Range, title: str) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    plain = FuncFormatter(lambda value, _pos: three_digits(value))  # 1e6, not 1e+06
    for axis, (low, high) in ((ax.xaxis, xlim), (ax.yaxis, ylim)):
        if high / low <= 1e3:  # a short range gets ticks at 1, 2, 5 x 10^k too
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable throughput (TFLOP/s)")
    ax.set_title(title, fontsize=LABEL_SIZE + 2)
    ax.xaxis.label.set_fontsize(LABEL_SIZE + 1)
    ax.yaxis.label.set_fontsize(LABEL_SIZE + 1)
    ax.tick_params(labelsize=LABEL_SIZE)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.08)


def _block_markers(placer: Placer, report: Report, y0: float) -> None:
    """Keep every label off the report's points (its GEMMs' predicted and measured ones too),
    its ridge marker and its ridge line."""
    for group in gemm_groups(report) + op_groups(report):
        placer.block(group.x, group.y, 5.0)
    for kind in ("predicted", "measured"):
        for point in timed_points(report, kind):
            placer.block(point.x, point.y, 5.0)
    roof = main_roof(report)
    placer.block(roof.ridge, roof.peak_tflops, 5.0)
    placer.block_vertical(roof.ridge, y0, roof.peak_tflops)


def _block_lines(placer: Placer, report: Report, xlim: Range, other_dtypes: bool,
                 host_link: bool) -> None:
    """Keep every label off the report's roof (slope and ceiling), its other-dtype ceilings
    and its host-link slope: drawn lines never run through text."""
    x0, x1 = xlim
    roofs = [main_roof(report)] + [d for d in [datasheet_roof(report)] if d]
    for roof in roofs:
        placer.block_line((x0, roof.slope_at(x0)), (roof.ridge, roof.peak_tflops))
        placer.block_line((roof.ridge, roof.peak_tflops), (x1, roof.peak_tflops))
    main = roofs[0]
    if other_dtypes:
        for _, peak in other_ceilings(report):
            placer.block_line((max(x0, Roof(peak, main.bandwidth_gbs).ridge), peak), (x1, peak))
    gbs = report.hardware.host_link_gbs
    if host_link and gbs:
        end = min(x1, Roof(main.peak_tflops, gbs).ridge)
        placer.block_line((x0, x0 * gbs / 1e3), (end, end * gbs / 1e3))


def _draw_points(ax: Axes, report: Report, marker: str, suffix: str) -> None:
    hw = report.hardware.name
    for which in ("memory", "compute"):
        chosen = [r for r in distinct(report.results) if r.bound == which]  # copies coincide
        if not chosen:
            continue
        xs = [r.gemm.intensity for r in chosen]
        ys = [r.attainable_flops_per_s / 1e12 for r in chosen]
        ax.scatter(xs, ys, s=40, marker=marker, color=BOUND_COLORS[which], zorder=6,
                   edgecolors="white", linewidths=0.6, gid=f"points-{which}:{hw}",
                   label=f"{which}-bound GEMMs{suffix}")
    for which in ("memory", "compute"):
        ops = [r for r in distinct(report.ops) if r.bound == which and r.op.flops]
        if ops:
            ax.scatter([r.op.intensity for r in ops],
                       [r.attainable_flops_per_s / 1e12 for r in ops], s=36, marker="x",
                       color=BOUND_COLORS[which], zorder=6, linewidths=1.4, gid=f"ops-{which}:{hw}",
                       label=f"{which}-bound other ops{suffix}")


def _basis_label(hardware: HardwareSpec) -> str:
    """The prediction's basis for a legend: ``calibrated, torch`` names the library a
    calibration was timed through (``analysis.predict.library_of``)."""
    from ..analysis.predict import basis_of, library_of

    library = library_of(hardware)
    return basis_of(hardware) + (f", {library['name']}" if library else "")


def _draw_time_points(ax: Axes, report: Report, marker: str = "o", suffix: str = "") -> None:
    """Predicted times as hollow grey markers of the device's shape (``marker``: a circle for
    the first), measured ones as black diamonds, each tied to its roof point by a thin dotted
    line: the roof points stay the bound they are. With several devices (``suffix`` names
    the device) each has its own legend entry, the shape telling whose prediction a point is."""
    hw = report.hardware.name
    styles: tuple[tuple[str, dict[str, Any]], ...]
    styles = (("predicted", {"s": 46, "marker": marker, "facecolors": "none",
                                       "edgecolors": "0.35", "linewidths": 1.2}),
                        ("measured", {"s": 44, "marker": "D", "color": "black",
                                      "edgecolors": "white", "linewidths": 0.6}))
    for kind, style in styles:
        points = timed_points(report, kind)
        if not points:
            continue
        name = (f"predicted time ({_basis_label(report.hardware)}){suffix}"
                if kind == "predicted" else f"measured here (--measure){suffix}")
        ax.scatter([p.x for p in points], [p.y for p in points], zorder=7,
                   gid=f"points-{kind}:{hw}", label=name, **style)
        if kind == "measured":
            for p in points:
                ax.plot([p.x, p.x], [p.y, p.roof_y], color="0.4", linewidth=0.7,
                        linestyle=":", zorder=5, gid=f"measured-to-roof:{hw}")


def _label_measured(ax: Axes, reports: list[Report], placer: Placer) -> None:
    """Each measured diamond named by its GEMM (``MM2``), small and grey, placed as the
    points' labels are (off the lines, labels and points, a leader when set apart): five
    GEMMs of one intensity drew five diamonds in one column that nothing told apart. Diamonds
    within a pixel of each other share one label. One device's only: on a chart of several,
    the device markers and the table tell them apart."""
    if len(reports) != 1:
        return
    groups = _coincident(ax, [Group(p.x, p.y, [p.name], 1)
                              for p in timed_points(reports[0], "measured")])
    for group in groups:
        text = group.label
        w, h = placer.text_size(text, LABEL_SIZE - 1)
        dx, dy = placer.put(group.x, group.y, (w, h), point_label_offsets(w, h), sided=True,
                            leader=True)
        far = needs_leader(dx, dy, w, h)
        arrow = dict(arrowstyle="-", color="0.6", lw=0.5, shrinkA=0, shrinkB=4) if far else None
        ax.annotate(text, (group.x, group.y), xytext=placer.to_points(dx, dy),
                    textcoords="offset points", ha="left", va="bottom",
                    fontsize=LABEL_SIZE - 1, color="0.35", zorder=7, arrowprops=arrow,
                    gid=f"label-measured:{reports[0].hardware.name}",
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.75))


def _draw_roofs(ax: Axes, report: Report, color: str, other_dtypes: bool, host_link: bool,
                placer: Placer) -> None:
    hw, roof = report.hardware.name, main_roof(report)
    measured = report.hardware.origin == "measured"
    kind = " measured" if measured else ""
    label = (f"{hw}{kind}: {main_dtypes(report)} {roof.peak_tflops:g} "
             f"{rate_unit(report.dtype)}, "
             f"{roof.bandwidth_gbs:g} GB/s")
    style: dict[str, Any] = dict(color=color, lw=2.0)
    if (roof.peak_tflops, roof.bandwidth_gbs) in placer.roofs:  # coincides with one drawn:
        style.update(ls=(0, (4, 3)), lw=2.4)                    # dashed, the first shows through
    placer.roofs.add((roof.peak_tflops, roof.bandwidth_gbs))
    _draw_roof(ax, roof, ("roof", hw, report.dtype), label, style)
    _mark_ridge(ax, roof, hw, color, placer)
    sheet = datasheet_roof(report)
    if sheet is not None:
        _draw_roof(ax, sheet, ("datasheet", hw, report.dtype), _theory_label(report, sheet),
                   dict(color=color, lw=1.2, ls="-.", alpha=0.6))
        placer.block_horizontal(sheet.peak_tflops, sheet.ridge, ax.get_xlim()[1])
    _ceiling_text(ax, roof.peak_tflops, f"{report.dtype} {roof.peak_tflops:g}", color, placer)
    if other_dtypes:
        _draw_other_ceilings(ax, report, roof, color, placer)
    if host_link and report.hardware.host_link_gbs:
        _draw_host_link(ax, report, roof, color)


def _theory_label(report: Report, sheet: Roof) -> str:
    """Legend text of a measured entry's theoretical roof; says when its bandwidth is unknown
    (the slope then falls back to the measured one)."""
    theory = report.hardware.theoretical
    known = theory is not None and theory.bandwidth_gbs is not None
    bandwidth = f"{sheet.bandwidth_gbs:g} GB/s" if known else "bandwidth not known"
    return (f"{report.hardware.name} theoretical: {sheet.peak_tflops:g} "
            f"{rate_unit(report.dtype)}, {bandwidth}")


def _draw_roof(ax: Axes, roof: Roof, names: tuple[str, str, str], label: str,
               style: dict[str, Any]) -> None:
    """The memory slope from the left edge to the ridge, then the ceiling to the right edge.

    ``names`` = (kind, hardware, dtype) give the gids ``kind-memory:hw`` and
    ``kind-compute:hw:dtype``."""
    kind, hw, dtype = names
    x0, x1 = ax.get_xlim()
    ridge, peak = roof.ridge, roof.peak_tflops
    ax.plot([x0, ridge], [roof.slope_at(x0), peak], gid=f"{kind}-memory:{hw}",
            label="_nolegend_", **style)
    ax.plot([ridge, x1], [peak, peak], gid=f"{kind}-compute:{hw}:{dtype}", label=label, **style)


def _mark_ridge(ax: Axes, roof: Roof, hw: str, color: str, placer: Placer) -> None:
    y0 = ax.get_ylim()[0]
    ax.plot([roof.ridge], [roof.peak_tflops], ls="none", marker="D", ms=5, mfc="white",
            mec=color, mew=1.2, zorder=5, gid=f"ridge:{hw}", label="_nolegend_")
    ax.plot([roof.ridge, roof.ridge], [y0, roof.peak_tflops], ls=":", lw=0.8, color=color,
            alpha=0.7, gid=f"ridge-line:{hw}", label="_nolegend_")
    text = f"ridge {three_digits(roof.ridge)} FLOP/B"
    if text in placer.texts:  # a coincident roof already labelled this ridge
        return
    placer.texts.add(text)
    # where slopes crowd the ridge line, the shorter "ridge 153" (the axis gives the unit)
    for words in (text, f"ridge {three_digits(roof.ridge)}", f"{three_digits(roof.ridge)}"):
        w, h = placer.text_size(words, LABEL_SIZE - 1)
        offset = placer.place(roof.ridge, y0, (h, w), ridge_offsets(w, h, placer.frame_height),
                              must_fit=words != f"{three_digits(roof.ridge)}")
        if offset is not None:
            break
    if offset is None:  # the last, shortest form is placed whether it fits or not
        return
    ax.annotate(words, (roof.ridge, y0), xytext=placer.to_points(*offset),
                textcoords="offset points", rotation=90, ha="left", va="bottom",
                fontsize=LABEL_SIZE - 1, color=color, gid=f"ridge-label:{hw}")


def _ceiling_text(ax: Axes, peak: float, text: str, color: str, placer: Placer,
                  alpha: float = 1.0) -> None:
    """``text`` just above the right end of a ceiling (or just below if that is taken); a
    ceiling another device already labelled at the same height with the same text is not
    labelled twice (no "fp16 125fp16 125")."""
    if text in placer.texts:
        return
    placer.texts.add(text)
    x1 = ax.get_xlim()[1]
    w, h = placer.text_size(text, LABEL_SIZE - 1)
    dx, dy = placer.put(x1, peak, (w, h), ceiling_offsets(w, h))
    ax.annotate(text, (x1, peak), xytext=placer.to_points(dx, dy), textcoords="offset points",
                ha="left", va="bottom", fontsize=LABEL_SIZE - 1, color=color, alpha=alpha,
                gid=f"ceiling-label:{text}")


def _draw_other_ceilings(ax: Axes, report: Report, roof: Roof, color: str,
                         placer: Placer) -> None:
    """Lighter dashed ceilings of the entry's other dtypes, each from its own ridge."""
    x0, x1 = ax.get_xlim()
    hw = report.hardware.name
    drawn = 0
    for dtypes, peak in other_ceilings(report):
        start = max(x0, Roof(peak, roof.bandwidth_gbs).ridge)
        if start >= x1:  # its ridge lies right of the chart: no ceiling to draw here
            continue
        ax.plot([start, x1], [peak, peak], ls="--", lw=1.0, color=color, alpha=0.35,
                gid=f"dtype-ceiling:{hw}:{dtypes.replace(' ', '')}",
                label=f"{hw}: other dtypes" if not drawn else "_nolegend_")
        drawn += 1
        _ceiling_text(ax, peak, f"{dtypes} {peak:g}", color, placer, alpha=0.6)


def _draw_host_link(ax: Axes, report: Report, roof: Roof, color: str) -> None:
    """The slope data streamed over the host link would follow, up to the compute ceiling."""
    link = report.hardware.host_link
    if link is None:
        return
    gbs, name = link.bandwidth_gbs, link.label
    x0, x1 = ax.get_xlim()
    end = min(x1, Roof(roof.peak_tflops, gbs).ridge)
    ax.plot([x0, end], [x0 * gbs / 1e3, end * gbs / 1e3], ls=":", lw=1.2, color=color,
            alpha=0.8, gid=f"host-link:{report.hardware.name}",
            label=f"{report.hardware.name}: host link"
                  + ("" if name == "host link" else f" ({name})")  # a bare --host-link GB/s
                  + f" {gbs:g} GB/s")
    point = stream_point(report)
    stream = report.scaling.host_link if report.scaling else None
    if point is not None and stream is not None:
        x, y = point
        ax.plot([x], [y], ls="none", marker="*", ms=13, color=color, mec="black", zorder=7,
                gid=f"host-link-step:{report.hardware.name}",
                label=f"{report.hardware.name}: step, input streamed ({stream.bound}-bound)")


def _label_points(ax: Axes, reports: list[Report], placer: Placer) -> None:
    """One label per point of one device. On a chart of several devices a GEMM sits at the
    same intensity on every device of one dtype, one above the other, so each column of points
    (those within a few pixels of one x, as many copies each) gets one label at its top point,
    naming every GEMM in it; the device markers tell the points apart. Six devices' labels are
    then as few as one device's."""
    groups = [g for report in reports for g in gemm_groups(report)] + _coincident(
        ax, [g for report in reports for g in op_groups(report)])
    if len(reports) > 1:
        groups = _columns(ax, groups)
    gid = f"label:{reports[0].hardware.name}" if len(reports) == 1 else "label:all"
    for group in groups:
        text = group.label
        w, h = placer.text_size(text, LABEL_SIZE)
        dx, dy = placer.put(group.x, group.y, (w, h), point_label_offsets(w, h), sided=True,
                            leader=True)
        far = needs_leader(dx, dy, w, h)
        arrow = dict(arrowstyle="-", color="0.5", lw=0.6, shrinkA=0, shrinkB=4) if far else None
        ax.annotate(text, (group.x, group.y), xytext=placer.to_points(dx, dy),
                    textcoords="offset points", ha="left", va="bottom", fontsize=LABEL_SIZE,
                    color="0.15", zorder=7, arrowprops=arrow, gid=gid,
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.75))


def _coincident(ax: Axes, groups: list[Group]) -> list[Group]:
    """Op groups whose points lie within a pixel of each other, on both axes, and stand for as
    many copies: one group, one label naming each kind once (ResNet-50's batch norms, each
    layer's a few parts in 10^4 apart in intensity for its per-channel statistics, were each
    labelled at what draws as one point). GEMMs keep a label per distinct point: their names,
    unlike kinds, are each one GEMM."""
    return _merged(ax, groups, 1.0, same_y=True)


def _columns(ax: Axes, groups: list[Group]) -> list[Group]:
    """Groups of several devices merged into columns: those within 6 pixels of one x and
    standing for as many copies share one group, anchored at its top point."""
    return _merged(ax, groups, 6.0, same_y=False)


def _merged(ax: Axes, groups: list[Group], within_px: float, same_y: bool) -> list[Group]:
    """Groups within ``within_px`` display pixels of the first of a merged group along x (and,
    ``same_y``, along y) and standing for as many copies merged into it, names joined; a
    column (not ``same_y``) is anchored at its top point."""
    merged: list[tuple[float, float, Group]] = []
    for group in sorted(groups, key=lambda g: (g.x, g.y)):
        px, py = ax.transData.transform((group.x, group.y))
        for x0, y0, kept in merged:
            if (px - x0 <= within_px and kept.copies == group.copies
                    and (not same_y or abs(py - y0) <= within_px)):
                new = [n for n in group.names if n not in kept.names]
                kept.names += new
                kept.total += group.total if new else 0  # (another device's same rows: once)
                if not same_y and group.y > kept.y:
                    kept.x, kept.y = group.x, group.y
                break
        else:
            merged.append((px, py, Group(group.x, group.y, list(group.names), group.copies,
                                         group.total)))
    return [group for _, _, group in merged]
