"""Label placement: text boxes set down first-fit in display pixels, kept off each other, off
markers and off drawn lines. Deterministic (no randomness, no renderer): a text's size comes
from its glyph outlines (matplotlib's TextToPath, imported inside the function).

Geometry: a box is ``(left, bottom, right, top)`` and a line segment ``(x0, y0, x1, y1)``, both
in display pixels; an offset is the box's lower-left corner in pixels from its anchor point.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes

Box = tuple[float, float, float, float]
Segment = tuple[float, float, float, float]
Offset = tuple[float, float]


class Placer:
    """First-fit placement of text boxes, in display pixels: a box is taken by the first
    candidate offset that stays inside the Axes and overlaps nothing placed or blocked before
    (and, for a point's label, ``sided``, lies on its point's side of every vertical line
    blocked, a ridge: a memory-bound point's label right of the ridge reads as a compute-bound
    one's; with a ``leader``, that line, from its point to its box, crosses no label placed
    before, and later labels keep off it); if none does, the inside candidate with the fewest
    clashes (else the first candidate). Deterministic: no randomness, no renderer."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        self.scale = ax.figure.dpi / 72.0
        self.taken: list[Box] = []
        self.lines: list[Segment] = []  # segments, display pixels
        self.walls: list[Segment] = []  # vertical lines (ridges) a label keeps its side of
        self.labels: list[Box] = []  # the text boxes placed (a leader line keeps off them)
        self.texts: set[str] = set()  # ceiling labels already drawn
        self.roofs: set[tuple[float, float]] = set()  # (peak, bandwidth) of roofs drawn

    @property
    def frame_height(self) -> float:
        """The Axes' height in display pixels."""
        return self.ax.bbox.height

    def to_points(self, dx: float, dy: float) -> tuple[float, float]:
        """Pixels to typographic points (1/72 inch) at the figure's dpi."""
        return dx / self.scale, dy / self.scale

    def text_size(self, text: str, fontsize: float) -> tuple[float, float]:
        """Width and height in pixels, a little generous (padding, line height)."""
        width_pt = text_width_pt(text, fontsize)
        return (width_pt + 0.4 * fontsize) * self.scale, 1.45 * fontsize * self.scale

    def block(self, x: float, y: float, radius: float) -> None:
        """Keep text off a marker of ``radius`` pixels at data point (x, y)."""
        px, py = self.ax.transData.transform((x, y))
        self.taken.append((px - radius, py - radius, px + radius, py + radius))

    def block_vertical(self, x: float, y0: float, y1: float) -> None:
        """Keep text off a vertical line from (x, y0) to (x, y1)."""
        (px, py0), (_, py1) = self.ax.transData.transform([(x, y0), (x, y1)])
        self.taken.append((px - 1.0, py0, px + 1.0, py1))
        self.walls.append((px, py0, px, py1))

    def block_horizontal(self, y: float, x0: float, x1: float) -> None:
        """Keep text off a horizontal line from (x0, y) to (x1, y)."""
        (px0, py), (px1, _) = self.ax.transData.transform([(x0, y), (x1, y)])
        self.taken.append((px0, py - 1.0, px1, py + 1.0))

    def block_line(self, start: tuple[float, float], end: tuple[float, float]) -> None:
        """Keep text off the straight (in display space) line from ``start`` to ``end``."""
        (ax0, ay0), (ax1, ay1) = self.ax.transData.transform([start, end])
        self.lines.append((ax0, ay0, ax1, ay1))

    def place(self, x: float, y: float, size: tuple[float, float],
              offsets: list[Offset], must_fit: bool = False,
              sided: bool = False, leader: bool = False) -> Offset | None:
        """The first offset (pixels) at which a box of ``size`` anchored at data point
        (x, y) clashes with nothing, and take that box; if none, the offset with the fewest
        clashes, or None (taking nothing) when ``must_fit``. ``sided``: a box across a wall
        from (x, y), beside the wall's span, clashes too. ``leader``: a box far enough to be
        drawn with a line to its point (``needs_leader``) clashes with each label that line
        crosses, and the line chosen is kept off by the labels after."""
        px, py = self.ax.transData.transform((x, y))
        w, h = size
        frame = self.ax.bbox.extents
        best, fewest = offsets[0], math.inf
        for dx, dy in offsets:
            box = (px + dx, py + dy, px + dx + w, py + dy + h)
            if not inside(box, frame):
                continue
            # a box over another box is the worst (text over text or a marker): it weighs
            # three line crossings
            clashes = 3 * sum(overlap(box, t) for t in self.taken)
            clashes += sum(crosses(box, line) for line in self.lines)
            if sided:
                clashes += sum(across(px, box, wall) for wall in self.walls)
            if leader and needs_leader(dx, dy, w, h):
                line = (px, py, px + dx + w / 2, py + dy + h / 2)
                # a line struck through text reads worse than text on a line: twice a crossing
                clashes += 2 * sum(crosses(label, line, pad=0) for label in self.labels)
            if clashes == 0:
                best = (dx, dy)
                break
            if clashes < fewest:
                best, fewest = (dx, dy), clashes
        else:
            if must_fit:
                return None
        dx, dy = best
        box = (px + dx, py + dy, px + dx + w, py + dy + h)
        self.taken.append(box)
        self.labels.append(box)
        if leader and needs_leader(dx, dy, w, h):
            self.lines.append((px, py, px + dx + w / 2, py + dy + h / 2))
        return dx, dy

    def put(self, x: float, y: float, size: tuple[float, float],
            offsets: list[Offset], sided: bool = False, leader: bool = False) -> Offset:
        """``place`` for a label that is always drawn: the best offset, never None."""
        offset = self.place(x, y, size, offsets, sided=sided, leader=leader)
        assert offset is not None  # only must_fit gives None
        return offset


#: The gap (pixels) between a point and its label's box past which a line joins them
LEADER_GAP = 12.0


def needs_leader(dx: float, dy: float, w: float, h: float) -> bool:
    """Whether a label of ``w`` x ``h`` pixels at offset (dx, dy) from its point sits far
    enough away to be drawn with a line to it: its box more than ``LEADER_GAP`` from the
    point across or up and down (a wide label set its own width aside read as no one's)."""
    across = max(0.0, dx, -(dx + w))
    upright = max(0.0, dy, -(dy + h))
    return across > LEADER_GAP or upright > LEADER_GAP


def point_label_offsets(w: float, h: float, gap: float = 6.0) -> list[Offset]:
    """Candidate lower-left corners (pixels from the point): the four corners first, then
    further up or down in steps of a line, and further left or right."""
    offsets = []
    for j in range(28):
        lift = j * (h + 2) / 2
        for dx in (gap, -w - gap, -w / 2, gap + w / 2, -1.5 * w - gap, gap + w, -2 * w - gap,
                   gap + 2 * w, -3 * w - gap):
            offsets += [(dx, gap + lift), (dx, -h - gap - lift)]
    return offsets


def ridge_offsets(w: float, h: float, height: float) -> list[Offset]:
    """For a text rotated upright at the foot of a ridge line: left of the line at the bottom,
    else right of it, else higher up in steps of 4 pixels (fine enough to find the gap between
    two slopes that cross the ridge line)."""
    return [(-h - 2, 3 + lift) if side == 0 else (2, 3 + lift)
            for lift in range(0, max(4, int(height - w)), 4) for side in (0, 1)]


def ceiling_offsets(w: float, h: float) -> list[Offset]:
    """Just above the right end of a ceiling, else just below, each further left in steps of
    a quarter of the text's width."""
    return [(-w - 4 - j * w / 4, dy) for j in range(24) for dy in (2, -h - 2)]


def crosses(box: Box, line: Segment, pad: float = 1.5) -> bool:
    """Whether segment ``line`` (x0, y0, x1, y1) passes through ``box`` grown by ``pad``:
    clip the segment to the box's x range, then compare its y span there (Liang-Barsky style)."""
    left, bottom, right, top = box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad
    x0, y0, x1, y1 = line
    if x0 > x1:
        x0, y0, x1, y1 = x1, y1, x0, y0
    if x1 < left or x0 > right:
        return False
    if x1 == x0:
        return min(y0, y1) <= top and max(y0, y1) >= bottom
    slope = (y1 - y0) / (x1 - x0)
    xa, xb = max(x0, left), min(x1, right)
    ya, yb = y0 + slope * (xa - x0), y0 + slope * (xb - x0)
    return min(ya, yb) <= top and max(ya, yb) >= bottom


def across(px: float, box: Box, wall: Segment) -> bool:
    """Whether ``box`` lies across vertical ``wall`` (x, y0, x, y1) from a point at ``px``:
    its middle on the other side, its height overlapping the wall's span."""
    x, y0, _, y1 = wall
    if box[3] < min(y0, y1) or box[1] > max(y0, y1):
        return False
    return (px < x) != ((box[0] + box[2]) / 2 < x)


def inside(box: Box, frame: Sequence[float]) -> bool:
    """Whether ``box`` lies wholly within ``frame`` (left, bottom, right, top)."""
    return box[0] >= frame[0] and box[1] >= frame[1] and box[2] <= frame[2] and box[3] <= frame[3]


def overlap(a: Box, b: Box) -> bool:
    """Whether two boxes share any area (touching edges do not count)."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@functools.lru_cache(maxsize=512)
def text_width_pt(text: str, fontsize: float) -> float:
    """The width of ``text`` at ``fontsize`` in points, from its glyph outlines."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, _height, _descent = TextToPath().get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False)
    return width
