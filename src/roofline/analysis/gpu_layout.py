"""The time cuDNN spends moving a convolution's maps between NCHW and NHWC on a GPU: the part of
``analysis.predict`` for a GEMM that carries such values (``Gemm.transposed``: a captured
convolution on NCHW maps, ``model.capture_convs._transposed``).

cuDNN's Tensor-Core convolutions take NHWC; on NCHW maps torch's convolution hands cuDNN the
maps as they are and cuDNN transposes around its kernel (``nchwToNhwcKernel`` in,
``nhwcToNchwKernel`` out). A lent H100 (torch 2.11, cuDNN 9.19;
benchmarks/data/h100_live_convkernels.csv) spent a quarter to two fifths of ResNet-50's NCHW
convolutions' kernel time in them. Each transpose reads its values once and writes them once,
at a rate its SMs set more than DRAM does::

    t = max(values / (V x S x f), 2 x values x e / (D x BW))

with S and f the SMs and the clock CUDA-core work runs at (``gpu_ops.sm_clocks_per_s``), e the
element size, D the share of DRAM bandwidth other ops stream at (``gpu_ops.op_constants``:
the published 0.88, or a GPU probe's own) and V ``TRANSPOSE_VALUES_PER_SM_CLOCK``: the geometric
mean over that H100's bf16 convolutions the rule names (3 x 3, 7 x 7 but the 3-channel stem, and
strided 1 x 1; forward and backward) of their values over their transposes' profiled time.
Checked, never fitted: the fp32 (TF32) ones there ran at 1.21 (DRAM binds at 1.41 in the
formula), and a lent H200's (the same SMs and clock, 1.43x the bandwidth;
h200_live_convkernels.csv) at 1.75 in bf16 and 1.45 in fp32. Only where the GEMM runs on Tensor
Cores (16-bit, TF32, fp8 on a GPU that has them): a CUDA-core convolution's layout is not
measured. Only the standard library is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from ..model.gemm import Gemm

#: values a transpose moves (each read and written once) per SM and clock (module docstring)
TRANSPOSE_VALUES_PER_SM_CLOCK = 1.64


def transpose_s(gemm: Gemm, hardware: HardwareSpec) -> float:
    """Seconds cuDNN spends transposing ``gemm.transposed`` values on ``hardware`` (module
    docstring); 0 on a CPU, without such values, or where the GEMM's math is not Tensor-Core."""
    if not gemm.transposed or hardware.kind != "gpu" or hardware.gpu is None:
        return 0.0
    from ..model.dtypes import itemsize
    from .gpu_gemm import uses_tensor_cores
    from .gpu_ops import op_constants, sm_clocks_per_s

    constants = op_constants(hardware)
    if constants is None or not uses_tensor_cores(hardware, gemm.dtype):
        return 0.0
    values = gemm.transposed
    return max(values / (TRANSPOSE_VALUES_PER_SM_CLOCK * sm_clocks_per_s(hardware)),
               2 * values * itemsize(gemm.dtype) / (constants.dram_fraction
                                                     * hardware.bandwidth_bytes_per_s))
