"""roofline: a Roofline / GEMM-shape advisor.

Which GEMMs of a network are memory-bound on a device, which dimensions miss Tensor-Core
alignment, what batch makes a layer compute-bound, and what a machine actually delivers.

The public names below are imported on first use (PEP 562), so ``import roofline`` and
``roofline --help`` stay fast; neither numpy, matplotlib nor any GPU library is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.9.0"  # moves when a contract changes: CHANGES.md

_EXPORTS = {
    "analysis.report": ("GemmResult", "Report", "analyze", "analyze_gemm"),
    "analysis.whatif": ("compare", "gemm_report", "sweep"),
    "analysis.whatif_comparison": ("Comparison",),
    "analysis.whatif_dtype": ("nearest_dtype",),
    "analysis.whatif_sweep": ("Sweep",),
    "api": ("analyze_model", "plan"),
    "errors": ("InputError", "RooflineError", "UnknownHardwareError", "UnsupportedDtypeError"),
    "hardware.catalog": ("HwdbWarning", "list_hardware", "load_hardware", "user_hwdb_dir"),
    "hardware.spec": ("HardwareSpec",),
    "model.gemm": ("Gemm", "gemm_bytes", "gemm_flops", "gemm_intensity"),
    "model.layers": ("Linear",),
    "model.network": ("Network", "load_network", "network_from_yaml"),
}
if TYPE_CHECKING:  # what a type checker sees; at run time __getattr__ imports on first use
    from .analysis.report import GemmResult, Report, analyze, analyze_gemm
    from .analysis.whatif import compare, gemm_report, sweep
    from .analysis.whatif_comparison import Comparison
    from .analysis.whatif_dtype import nearest_dtype
    from .analysis.whatif_sweep import Sweep
    from .api import analyze_model, plan
    from .errors import InputError, RooflineError, UnknownHardwareError, UnsupportedDtypeError
    from .hardware.catalog import HwdbWarning, list_hardware, load_hardware, user_hwdb_dir
    from .hardware.spec import HardwareSpec
    from .model.gemm import Gemm, gemm_bytes, gemm_flops, gemm_intensity
    from .model.layers import Linear
    from .model.network import Network, load_network, network_from_yaml

_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [  # the names of _EXPORTS (tests/test_architecture.py checks), written out for tools
    "Comparison", "Gemm", "GemmResult", "HardwareSpec", "HwdbWarning", "InputError", "Linear",
    "Network", "Report", "RooflineError", "Sweep", "UnknownHardwareError",
    "UnsupportedDtypeError", "__version__", "analyze", "analyze_gemm", "analyze_model", "compare",
    "gemm_bytes", "gemm_flops", "gemm_intensity", "gemm_report", "list_hardware", "load_hardware",
    "load_network", "nearest_dtype", "network_from_yaml", "plan", "sweep", "user_hwdb_dir",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
