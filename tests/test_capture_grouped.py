"""A grouped GEMM (``torch._grouped_mm``: how transformers 5 runs a mixture of experts) captured
as the batched GEMM it is under even routing: the T rows its offsets split over G groups, a split
the capture cannot see (it depends on the router's values), spread as the config route's mixture
of experts spreads its routed rows, over min(G, T) groups of ceil(T / that) rows. Worked out by
hand from the shapes; ``test_capture_hf`` checks Mixtral's against the config.json route.

Needs torch (the `torch` extra; .ci/run installs it)."""

from __future__ import annotations

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.torch import capture  # noqa: E402

if not hasattr(torch, "_grouped_mm"):
    pytest.skip("this torch has no torch._grouped_mm", allow_module_level=True)

G, K, N = 4, 32, 64  # 4 experts, each a 32 -> 64 projection


class Experts(torch.nn.Module):
    """Each routed row times its expert's weight (G x K x N), as transformers' grouped-GEMM
    experts run it: ``torch._grouped_mm(rows, weight, offs=offsets)``."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(G, K, N, dtype=torch.bfloat16))
        # a projection before the experts, so that training computes the rows' gradient
        self.proj = torch.nn.Linear(K, K, bias=False, dtype=torch.bfloat16)

    def forward(self, rows):
        rows = self.proj(rows)
        offs = torch.arange(1, G + 1, dtype=torch.int32, device=rows.device) * (
            rows.shape[0] // G)
        return torch._grouped_mm(rows, self.weight, offs=offs)


def _gemms(rows: int, mode: str):
    net = capture(Experts(), torch.zeros(rows, K, dtype=torch.bfloat16), mode=mode)
    assert net.uncosted == ()
    return [(g.pass_, g.batch_count, g.m, g.n, g.k, g.flops, g.bytes) for g in net.gemms()
            if g.layer != "proj"]


def test_routed_rows_spread_over_the_experts():
    # 256 rows over 4 experts: 4 products of 64 x 64 x 32; FLOPs 2 T K N = 1,048,576; bytes
    # (bf16) the rows 256 x 32, the 4 weights 4 x 32 x 64, the output 256 x 64: 32,768 values
    assert _gemms(256, "inference") == [
        ("forward", 4, 64, N, K, 2 * 256 * K * N, 2 * (256 * K + G * K * N + 256 * N))]
    assert 256 * K + G * K * N + 256 * N == 32_768


def test_the_backward_has_the_experts_data_and_weight_gradients():
    gemms = {g[0]: g[1:] for g in _gemms(256, "train")}
    # the data gradient: each row's dY (256 x 64) times its expert's W^T (64 x 32): as the
    # forward, N and K swapped
    assert gemms["backward-data"] == (4, 64, K, N, 2 * 256 * K * N,
                                      2 * (256 * N + G * K * N + 256 * K))
    # the weight gradient: per expert X_g^T dY_g over its 64 rows (K = the rows), a G x K x N
    # output: X^T 32 x 256, dY 256 x 64, dW 4 x 32 x 64
    assert gemms["backward-weight"] == (4, K, N, 64, 2 * 256 * K * N,
                                        2 * (K * 256 + 256 * N + G * K * N))


def test_fewer_rows_than_experts_run_one_row_each():
    # a decode step's 2 routed rows: 2 experts of 1 row, and only their 2 weights read
    assert _gemms(2, "inference") == [
        ("forward", 2, 1, N, K, 2 * 2 * K * N, 2 * (2 * K + 2 * K * N + 2 * N))]
