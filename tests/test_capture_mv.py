"""A matrix times a vector in a captured module (``torch.mv``, ``torch.addmv``,
``torch.matmul`` with a 1-D operand) is a GEMM of N = 1, not an op of unknown FLOPs; the
in-place squeeze torch.matmul makes of a vector-times-matrix product moves nothing. Hand
counts: 2 M K FLOPs, the matrix, the vector and the product read or written once."""

from __future__ import annotations

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.torch import capture  # noqa: E402


class _Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(256, 512))
        self.b = torch.nn.Parameter(torch.randn(256))

    def forward(self, x):
        # W x + b (addmv), then a vector times W (torch.matmul: unsqueeze, mm, squeeze_)
        return torch.addmv(self.b, self.w, x).relu() @ self.w


def test_a_matrix_times_a_vector_is_a_gemm_of_one_column():
    net = capture(_Model(), torch.randn(512), mode="inference")
    first, second = net.gemms()
    # addmv: M 256 (W's rows) x N 1 x K 512, 2 x 256 x 512 FLOPs; W (131,072 values), x (512)
    # and the product (256) at 4 bytes; x runs along K
    assert (first.m, first.n, first.k) == (256, 1, 512)
    assert first.flops == 2 * 256 * 512
    assert first.bytes == (256 * 512 + 512 + 256) * 4
    assert first.rows == (2, 2, 1)
    # the vector times W: a 1 x 512 x 256 mm
    assert (second.m, second.n, second.k) == (1, 512, 256)
    kinds = [op.kind for op in net.ops()]
    # addmv's bias: read, copied into the product, read back (as addmm's); no squeeze_ op
    assert kinds == ["bias", "aten.relu"]
    assert net.uncosted == ()


@pytest.mark.parametrize("call", [torch.mv, lambda w, x: w @ x])
def test_mv_and_matmul_of_a_vector_record_the_same_gemm(call):
    class Mv(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(64, 96))

        def forward(self, x):
            return call(self.w, x)

    (gemm,) = capture(Mv(), torch.randn(96), mode="inference").gemms()
    assert (gemm.m, gemm.n, gemm.k, gemm.flops) == (64, 1, 96, 2 * 64 * 96)
