"""The HTML report: one self-contained page per analysis (``page``: analyze and the probe;
``whatif``: compare and sweep; ``plan``: plan), its inline SVG charts (``svg``), and a
hand-written stylesheet and script shipped beside them (``page.css``, ``page.js``). Jupyter
shows the same blocks (``report_fragment``, ``comparison_fragment``, ``sweep_fragment``,
``plan_fragment``)."""

from __future__ import annotations

from .page import probe_page, report_fragment, report_page
from .plan import plan_fragment, plan_page
from .whatif import comparison_fragment, comparison_page, sweep_fragment, sweep_page

__all__ = ["comparison_fragment", "comparison_page", "plan_fragment", "plan_page", "probe_page",
           "report_fragment", "report_page", "sweep_fragment", "sweep_page"]
