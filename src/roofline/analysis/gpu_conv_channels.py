"""A convolution on a GPU of fewer than 16 input channels (a group's): a network's first layer
over an image's or a clip's 3 colour channels. cuDNN runs it, but not at Tensor-Core speed. On a
lent H100 (torch 2.11, cuDNN 9.19) the 3-channel stems ran at 33-67 TFLOP/s whatever their dtype,
where the same GPU's dense Tensor-Core peaks are 494.5 (TF32) and 989.5 (bf16) and its CUDA-core
fp32 peak 67:

==========================================  =====  ==========================  =========
stem (batch, map; data)                     dtype  forward                     weight
                                                                               gradient
==========================================  =====  ==========================  =========
ResNet-50's 7 x 7 / 2 (64, 224 x 224;       TF32   41 (``indexed_wo_smem``)    63
h100_live_convkernels.csv)                  bf16   39 (C padded to 8, align8)  67
R3D-18's 3 x 7 x 7 / 1, 2, 2 (8, 16 x 112   TF32   47 (``indexed_wo_smem``)    37
x 112; h100_live_convs3d.csv)               bf16   14 (CUDA cores: ``implicit  33
                                                   _convolveNd_sgemm``)
==========================================  =====  ==========================  =========

(The forward's and the weight gradient's main kernels: 2 x C.T.R.S x K x N.D.P.Q FLOPs over
their profiled time.) So such a convolution's GEMM runs no faster than the GPU's CUDA cores
(``narrow_channels_s``): its FLOPs at the fp32 CUDA-core peak and the model's sustained
CUDA-core fraction (``gpu_gemm.FITTED``, or a GPU probe's own), where the Tensor-Core model
predicts less. On that H100 (main kernels, tests/test_gpu_conv_channels.py) the 2-D stems went
from 47-116 us predicted to 281 (measured 226-387: 0.80-1.38x, were 2.1-8.2x) and the 3-D ones
from 54-116 us to 422 (measured 478-690: 1.13-1.64x; the bf16 forward's 1,604, which cuDNN runs
on CUDA cores at 21% of their peak, 3.8x, was 30x). The whole GPU GEMM model for CUDA-core
work (its SIMT tiles and main loop) was tried in its place and put the 2-D stem's weight
gradient at 677 us, 2.8x its 241: only the rate is taken.

Where the line falls (``NARROW_CHANNELS``): stems of 3, 4 and 8 channels timed on that H100
(benchmarks/data/h100_live_convs_align.csv, ``bench_gpu_convs_align.py``; 2-D and 3-D, TF32 and
bf16, NCHW and channels last, forward and backward: 48 rows) all ran at CUDA-core rates, 22-171
TFLOP/s, those whose channels fill 16 bytes (4 in TF32, 8 in bf16) too. With the line at the 16
bytes a Tensor-Core kernel loads at a time, as first drawn from the 3-channel stems alone, 13 of
the 48 came within 1.25x and 27 within 2x (median 1.79, up to 8.4x); at fewer than 16 channels,
24 and 44 (median 1.17, 0.32-3.78). The line was chosen on those rows (in sample): 9-15
channels were never timed, and the layers past the stems there (64 and 144 channels) ran at
Tensor-Core rates. A layer whose output channels alone are few (an RGB decoder's last
convolution) is not held: its weight gradient ran 3.4-40x its prediction there, unmodelled.
Only the standard library is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from ..model.gemm import Gemm
    from .gpu_gemm import GpuDevice, GpuGemmConstants

#: a convolution of fewer input channels (a group's) runs no faster than CUDA cores (module
#: docstring)
NARROW_CHANNELS = 16


def input_channels(gemm: Gemm) -> int | None:
    """The input channels (a group's) of a convolution's GEMM, from its roles (``GemmShape``:
    ``in_channels`` a dimension of its own, or ``in_channels x R x S`` over its ``align``
    taps); None for a GEMM that is not a convolution's."""
    if not any("R x S" in role for role in gemm.roles):
        return None
    for dim, role, unit in zip((gemm.m, gemm.n, gemm.k), gemm.roles, gemm.align):
        if role == "in_channels" or role.startswith("in_channels x "):
            return dim // unit if unit else dim
    return None


def narrow_channels(gemm: Gemm) -> bool:
    """Whether ``gemm`` is a convolution's of fewer than ``NARROW_CHANNELS`` input channels
    (module docstring)."""
    channels = input_channels(gemm)
    return channels is not None and channels < NARROW_CHANNELS


def narrow_channels_s(gemm: Gemm, hardware: HardwareSpec, device: GpuDevice,
                      constants: GpuGemmConstants) -> float:
    """The least time ``gemm`` takes on ``hardware`` for its narrow input channels (module
    docstring): its FLOPs at the fp32 CUDA-core peak times ``constants``' CUDA-core fraction,
    where ``device`` (the model's view for its dtype) runs it on Tensor Cores and its channels
    are fewer than ``NARROW_CHANNELS``; else 0."""
    from .gpu_gemm import device_for

    if not device.tensor_core or not narrow_channels(gemm):
        return 0.0
    cuda = device_for(hardware, "fp32")
    return gemm.flops / (cuda.peak_flops_per_s * constants.cuda_core_fraction)
