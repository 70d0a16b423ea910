"""The dtype a captured module's GEMMs are priced in: the model's (asked for, else its first
floating parameter's, buffer's or input's), else, where it has none (weights kept as plain
tensors), the dtype its GEMMs ran in, never a silent fp32; GEMMs that ran in another dtype are
named in a warning."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from roofline.analysis.report import analyze  # noqa: E402
from roofline.hardware.catalog import load_hardware  # noqa: E402
from roofline.output.times import gemm_dtype_warning  # noqa: E402
from roofline.torch import capture  # noqa: E402


class Plain(torch.nn.Module):
    """bf16 weights as plain attributes, no parameter: token ids in, a 16 x 16 projection."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.randn(16, 16, dtype=torch.bfloat16, device="meta")

    def forward(self, ids):
        x = torch.nn.functional.embedding(ids, self.w)
        return torch.nn.functional.linear(x, self.w)


class Mixed(torch.nn.Module):
    """fp32 parameters, one projection run in bf16."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 16, bias=False)
        self.b = torch.nn.Linear(16, 16, bias=False)

    def forward(self, x):
        y = self.a(x)
        return torch.nn.functional.linear(y.to(torch.bfloat16), self.b.weight.to(torch.bfloat16))


def test_a_module_without_floating_parameters_is_priced_as_its_gemms_ran():
    ids = torch.zeros(2, 3, dtype=torch.long, device="meta")
    net = capture(Plain(), ids, mode="inference")
    assert net.dtype == "bf16" and net.gemm_dtypes == (("bf16", 1),)
    # the 6 x 16 x 16 GEMM: A 6 x 16, B 16 x 16, C 6 x 16 bf16 values, 2 bytes each
    (gemm,) = net.gemms()
    assert gemm.bytes == 2 * (6 * 16 + 16 * 16 + 6 * 16)


def test_gemms_in_another_dtype_than_the_model_are_named():
    x = torch.zeros(4, 16, device="meta")
    net = capture(Mixed(), x, mode="inference")
    assert net.dtype == "fp32" and net.gemm_dtypes == (("bf16", 1), ("fp32", 1))
    report = analyze(net, load_hardware("h100"))
    assert gemm_dtype_warning(report) == (
        "the capture ran GEMMs in another dtype than the model's fp32 (1 in bf16) and prices "
        "every GEMM in fp32: cast the module (or give dtype=) to the dtype it runs in")
    assert gemm_dtype_warning(report) in report.warnings
    cast = capture(Mixed(), x, mode="inference", dtype="bf16")
    assert gemm_dtype_warning(analyze(cast, load_hardware("h100"))) is None
    # a dtype given after the capture (analyze --dtype) is the one GEMMs are held against
    assert gemm_dtype_warning(analyze(net.with_overrides(dtype="bf16"),
                                      load_hardware("h100"))) == (
        "the capture ran GEMMs in another dtype than the model's bf16 (1 in fp32) and prices "
        "every GEMM in bf16: cast the module (or give dtype=) to the dtype it runs in")


class Attention(torch.nn.Module):
    """A bf16 projection and torch's own attention (math on the meta device: it upcasts to
    fp32 before its two batched matmuls)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 3, 3, 16).permute(2, 0, 1, 3)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def test_torchs_own_attention_upcasting_on_meta_raises_no_warning():
    x = torch.zeros(2, 3, 16, device="meta")
    net = capture(Attention(), x, mode="inference", dtype="bf16", attention="naive")
    assert net.gemm_dtypes == (("bf16", 1),)  # the projection; attention's GEMMs not counted
    assert len(net.gemms()) == 3
    assert gemm_dtype_warning(analyze(net, load_hardware("h100"))) is None
