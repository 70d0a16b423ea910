"""roofline: a Roofline / GEMM-shape advisor.

Which GEMMs of a network are memory-bound on a device, which dimensions miss Tensor-Core
alignment, what batch makes a layer compute-bound, and what a machine actually delivers.

Importing this package imports neither numpy, matplotlib nor any GPU library.
"""

__version__ = "0.1.0"

from .analysis import GemmResult, Report, analyze, analyze_gemm  # noqa: E402
from .api import analyze_model  # noqa: E402
from .database import list_hardware, load_hardware, user_hwdb_dir  # noqa: E402
from .errors import (  # noqa: E402
    InputError,
    RooflineError,
    UnknownHardwareError,
    UnsupportedDtypeError,
)
from .gemm import Gemm, gemm_bytes, gemm_flops, gemm_intensity  # noqa: E402
from .hardware import HardwareSpec  # noqa: E402
from .network import Linear, Network, load_network, network_from_yaml  # noqa: E402

__all__ = [
    "Gemm", "GemmResult", "HardwareSpec", "InputError", "Linear", "Network", "Report",
    "RooflineError", "UnknownHardwareError", "UnsupportedDtypeError", "__version__",
    "analyze", "analyze_gemm", "analyze_model", "gemm_bytes", "gemm_flops", "gemm_intensity",
    "list_hardware", "load_hardware", "load_network", "network_from_yaml", "user_hwdb_dir",
]
