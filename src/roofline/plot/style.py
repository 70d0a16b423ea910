"""How the charts look, in one place: colours by bound and by device, device markers, the
label font size (points)."""

from __future__ import annotations

BOUND_COLORS = {"memory": "#d62728", "compute": "#1f77b4"}
HARDWARE_COLORS = ("#222222", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P")
LABEL_SIZE = 10  # readable on a slide; ridge and ceiling labels one point smaller
