"""The dtype a captured module's GEMMs are priced in: the model's (asked for, else its first
floating parameter's, buffer's or input's), else, where it has none (weights kept as plain
tensors), the dtype its GEMMs ran in, never a silent fp32; a GEMM that ran in another dtype
(a bf16 projection in an fp32 model, torch's int8 and fp8 GEMMs) is priced in its own."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from roofline.analysis.report import analyze  # noqa: E402
from roofline.errors import UnsupportedDtypeError  # noqa: E402
from roofline.hardware.catalog import load_hardware  # noqa: E402
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


def test_a_gemm_in_another_dtype_than_the_model_is_priced_as_it_ran():
    x = torch.zeros(4, 16, device="meta")
    net = capture(Mixed(), x, mode="inference")
    assert net.dtype == "fp32" and net.gemm_dtypes == (("bf16", 1), ("fp32", 1))
    first, second = net.gemms()
    # 4 x 16 x 16: A 4 x 16, B 16 x 16, C 4 x 16 values; the fp32 one at 4 B, the bf16 one at 2
    assert (first.dtype, first.bytes) == ("fp32", 4 * (64 + 256 + 64))
    assert (second.dtype, second.c_dtype, second.bytes) == ("bf16", "bf16", 2 * (64 + 256 + 64))
    report = analyze(net, load_hardware("h100"))
    assert [r.gemm.dtype for r in report.results] == ["fp32", "bf16"]
    assert not any("another dtype" in w for w in report.warnings)
    # a dtype given after the capture (analyze --dtype) moves the model's GEMMs, not the one
    # that ran in its own
    assert [(g.dtype, g.bytes) for g in net.with_overrides(dtype="fp16").gemms()] == [
        ("fp16", 2 * (64 + 256 + 64)), ("bf16", 2 * (64 + 256 + 64))]
    cast = capture(Mixed(), x, mode="inference", dtype="bf16")
    assert [g.dtype for g in cast.gemms()] == ["bf16", "bf16"]


class Attention(torch.nn.Module):
    """A bf16 projection and torch's own attention (math on the meta device: it upcasts to
    fp32 before its two batched matmuls)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 3, 3, 16).permute(2, 0, 1, 3)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def test_torchs_own_attention_upcasting_on_meta_stays_in_the_models_dtype():
    x = torch.zeros(2, 3, 16, device="meta")
    net = capture(Attention(), x, mode="inference", dtype="bf16", attention="naive")
    assert net.gemm_dtypes == (("bf16", 1),)  # the projection; attention's GEMMs not counted
    # its two batched GEMMs ran in fp32 on the meta device only: priced in bf16, as a GPU's
    # attention kernels run them
    assert [g.dtype for g in net.gemms()] == ["bf16"] * 3


class Int8Linear(torch.nn.Module):
    """A bf16 model whose projection runs as torch's int8 GEMM (``torch._int_mm``, as torchao's
    W8A8 does): activations and an int8 weight buffer of 64 x 32, an int32 output."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(32, dtype=torch.bfloat16))
        self.register_buffer("w", torch.zeros(64, 32, dtype=torch.int8))

    def forward(self, x):
        return torch._int_mm(x.to(torch.int8), self.w).to(torch.bfloat16) * self.scale


class Fp8Linear(torch.nn.Module):
    """A bf16 model whose projection runs as torch's scaled fp8 GEMM (``torch._scaled_mm``):
    e4m3 operands 32 x 64 and 64 x 32 (the weight column-major, as cuBLASLt takes it), a bf16
    output."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.zeros(32, 64, dtype=torch.float8_e4m3fn))
        self.register_buffer("one", torch.ones((), dtype=torch.float32))
        self.scale = torch.nn.Parameter(torch.ones(32, dtype=torch.bfloat16))

    def forward(self, x):
        return torch._scaled_mm(x.to(torch.float8_e4m3fn), self.w.t(), scale_a=self.one,
                                scale_b=self.one, out_dtype=torch.bfloat16) * self.scale


def test_an_int8_gemm_is_a_gemm_in_int8_with_an_int32_output():
    net = capture(Int8Linear(), torch.zeros(32, 64, dtype=torch.bfloat16), mode="inference")
    assert net.dtype == "bf16" and net.uncosted == () and net.gemm_dtypes == ()
    (gemm,) = net.gemms()
    # 32 x 32 x 64: 2 x 32 x 32 x 64 = 131,072 FLOPs; A and B 1 B a value, C 4 B: 2,048 +
    # 2,048 + 4,096 B (before: an op of 0 FLOPs, uncosted)
    assert (gemm.m, gemm.n, gemm.k, gemm.dtype, gemm.c_dtype) == (32, 32, 64, "int8", "int32")
    assert (gemm.flops, gemm.bytes) == (131_072, 8_192)
    report = analyze(net, load_hardware("h100"))
    # on the device's int8 peak: it is priced as it ran
    assert report.results[0].gemm.dtype == "int8"
    # a dtype override moves the model's values, not the int8 GEMM's
    (as_fp16,) = net.with_overrides(dtype="fp16").gemms()
    assert (as_fp16.dtype, as_fp16.bytes) == ("int8", 8_192)


def test_an_fp8_gemm_is_a_gemm_in_fp8_with_its_out_dtype():
    net = capture(Fp8Linear(), torch.zeros(32, 64, dtype=torch.bfloat16), mode="inference")
    assert net.uncosted == ()
    (gemm,) = net.gemms()
    # A 32 x 64 and B 64 x 32 at 1 B, C 32 x 32 bf16 at 2 B: 2,048 + 2,048 + 2,048 B
    assert (gemm.dtype, gemm.c_dtype, gemm.flops, gemm.bytes) == ("fp8", "bf16", 131_072,
                                                                  6_144)
    # a device without fp8 says so in one line (an A100's entry has no fp8 peak)
    with pytest.raises(UnsupportedDtypeError, match="has no fp8 peak"):
        analyze(net, load_hardware("a100"))


class TiedLM(torch.nn.Module):
    """A bf16 token embedding (100 x 16), a 16 x 16 projection with its bias, and an output
    layer tied to the embedding (its weight the embedding's table)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.fc = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 100, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.fc(self.embed(ids)))


def test_a_weight_format_stores_the_matrices_gemms_read_not_the_table():
    from roofline.api import analyze_model

    net = capture(TiedLM().to(torch.bfloat16), torch.zeros(2, 4, dtype=torch.long),
                  mode="inference")
    # 1,872 parameters: the table 1,600, the projection's 256 and its 16 biases (the head's
    # weight is the table); the one matrix a weight format stores is the projection's 256
    assert net.parameters == 1_872
    kinds = {g.layer: g.b_operand for g in net.gemms()}
    assert kinds == {"fc": "weight", "head": "tied"}  # the head reads the table as it is
    assert analyze_model(net, "h100").memory.parts["weights"] == 1_872 * 2
    # int8 weights: the 256 at 1 B, the other 1,616 at bf16's 2 B (before: all 1,872 at 2 B
    # while the GEMMs read the projection and the head at 1 B)
    int8 = analyze_model(net, "h100", weights="int8")
    assert int8.memory.parts["weights"] == 256 * 1 + 1_616 * 2 == 3_488
    head = next(r.gemm for r in int8.results if r.gemm.layer == "head")
    assert head.b_dtype == ""  # the table at the model's dtype, as memory holds it


class Conv(torch.nn.Module):
    """A 3 x 3 convolution, 64 -> 64 channels on 16 x 16 (padding 1), then a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False)
        self.fc = torch.nn.Linear(64 * 16 * 16, 10, bias=False)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def test_fp32_convolutions_run_in_tf32_on_a_gpu_that_has_it():
    """torch runs an fp32 convolution in TF32 under ``torch.backends.cudnn.allow_tf32``, True
    by default, and an fp32 matmul in fp32 unless ``torch.backends.cuda.matmul.allow_tf32`` (False
    by default). Batch 32: the convolution's forward GEMM is M = 32 x 16 x 16 = 8,192, N = 64,
    K = 64 x 9 = 576: 2 x 8,192 x 64 x 576 = 603,979,776 FLOPs; its roofline on an A100 at the
    TF32 peak, 156 TFLOP/s (its operands, 4 bytes a value, need 4.34 MB, 2.1 us at 2039 GB/s:
    compute-bound): 3.872 us, where fp32's 19.5 TFLOP/s gives 30.97 us. A V100 and a CPU have
    no TF32: fp32 there."""
    net = capture(Conv(), torch.zeros(32, 64, 16, 16), mode="inference")
    assert [(g.layer, g.tf32) for g in net.gemms()] == [("conv", True), ("fc", False)]
    a100 = analyze(net, load_hardware("a100-sxm4-80gb"))
    conv = a100.results[0]
    assert conv.gemm.dtype == "tf32" and conv.gemm.flops == 603_979_776
    assert conv.time_s == pytest.approx(603_979_776 / 156e12) == pytest.approx(3.872e-6, 1e-3)
    assert a100.results[1].gemm.dtype == "fp32"
    from roofline.output.report import report_table

    assert "tf32: MM1 run in TF32" in report_table(a100)  # said in the header, with its peak
    assert "at the 156 TFLOP/s TF32 peak" in " ".join(report_table(a100).split())
    for entry in ("v100-sxm2-16gb", "xeon-platinum-8480plus"):
        assert [r.gemm.dtype for r in analyze(net, load_hardware(entry)).results] == [
            "fp32", "fp32"]
    # under a bf16 override the convolution is bf16, no TF32
    assert {r.gemm.dtype for r in analyze(net.with_overrides(dtype="bf16"),
                                           load_hardware("a100-sxm4-80gb")).results} == {"bf16"}


def test_the_tf32_flags_are_read_when_the_capture_runs():
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        net = capture(Conv(), torch.zeros(32, 64, 16, 16), mode="inference")
    assert [g.tf32 for g in net.gemms()] == [False, False]
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        net = capture(Conv(), torch.zeros(32, 64, 16, 16), mode="inference")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    assert [g.tf32 for g in net.gemms()] == [True, True]


class Fp8Stored(torch.nn.Module):
    """A bf16 model whose first tensor is a float8 weight (stored scaled, as torchao keeps
    one): its projection dequantizes the weight to bf16 and runs a bf16 GEMM."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.zeros(32, 64, dtype=torch.float8_e4m3fn))
        self.register_buffer("scale", torch.ones(32, dtype=torch.bfloat16))

    def forward(self, x):
        return torch.nn.functional.linear(x, self.w.to(torch.bfloat16)) * self.scale


def test_a_float8_first_tensor_is_passed_over_not_read_as_fp32():
    # the float8 buffer came first and read as "fp32" (no float8 name in the table): the model
    # is bf16, its next tensor's and its input's; its GEMM, 16 x 32 x 64, priced in bf16
    net = capture(Fp8Stored(), torch.zeros(16, 64, dtype=torch.bfloat16), mode="inference")
    assert net.dtype == "bf16"
    (gemm,) = net.gemms()
    assert (gemm.dtype, gemm.bytes) == ("bf16", 2 * (16 * 64 + 64 * 32 + 16 * 32))
