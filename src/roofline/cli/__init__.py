"""The ``roofline`` command: parses options, calls the library, prints what it returns.

Bad input (an unreadable or invalid file, an unknown hardware name or dtype) exits with status 2
and one line on stderr; no command prints a traceback for it.

This package's face: the group ``cli`` and the console script ``main`` (``group``), each command
registered on the group by importing the module that holds it (``report_commands``: analyze and
gemm; ``whatif_commands``: compare and sweep; ``plan_command``; ``hw_commands``;
``probe_command``), and the names read from ``roofline.cli`` (tests, tools) exported from here.
"""

from __future__ import annotations

from .console import _Chunked
from .group import cli, main
from .hw_commands import hw, hw_list, hw_show
from .options import FORMATS, GEMM_LAYOUTS, Count, SignedArguments
from .plan_command import plan
from .probe_command import probe
from .report_commands import analyze, gemm
from .reports import _stream_json
from .whatif_commands import compare, sweep

__all__ = ["FORMATS", "GEMM_LAYOUTS", "Count", "SignedArguments", "_Chunked", "_stream_json",
           "analyze", "cli", "compare", "gemm", "hw", "hw_list", "hw_show", "main", "plan",
           "probe", "sweep"]
