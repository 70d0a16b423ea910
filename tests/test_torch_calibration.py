"""Calibrating through torch (``probe --library torch``, ``kernels/torch_cpu.py``): the torch
kernels' products against numpy's, a probe whose calibration is torch's, and the warning a
model captured from torch gets on a calibration through numpy's BLAS. Needs torch (the `torch`
extra; .ci/run installs it)."""

from __future__ import annotations

import copy
import json
import sys

import numpy as np
import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402
from _probe_fakes import CPUINFO  # noqa: E402
from test_predict import ENTRY  # noqa: E402

from roofline import probe  # noqa: E402
from roofline.analysis.report import analyze  # noqa: E402
from roofline.errors import KernelCheckError  # noqa: E402
from roofline.hardware.spec import HardwareSpec  # noqa: E402
from roofline.kernels import torch_cpu  # noqa: E402
from roofline.output.report import report_markdown, report_table  # noqa: E402
from roofline.probe import identify, runner  # noqa: E402
from roofline.torch import capture  # noqa: E402

TORCH = {"name": "torch", "version": "2.13.0+cpu", "blas": "MKL 2024.2, oneDNN 3.12.0",
         "threads": 2}


@pytest.fixture
def recorded(monkeypatch):
    """Every torch.matmul the kernels make, as (a, b, out), the real product computed."""
    calls = []
    real = torch.matmul

    def matmul(a, b, out):
        calls.append((a, b, out))
        return real(a, b, out=out)

    monkeypatch.setattr(torch, "matmul", matmul)
    return calls


@pytest.mark.parametrize("dtype", ["fp64", "fp32"])
def test_torch_kernels_compute_the_products_numpy_computes(recorded, dtype):
    rtol = 1e-12 if dtype == "fp64" else 1e-5
    kernels = [torch_cpu.shaped_gemm_kernel(5, 7, 3, dtype),
               torch_cpu.shaped_gemm_kernel(4, 6, 9, dtype, batch_count=3),
               torch_cpu.gemm_kernel(16, dtype), torch_cpu.small_gemm_kernel(8, dtype),
               *torch_cpu.thin_gemm_kernels((1, 4), 32, dtype)]
    assert [k.work for k in kernels] == [2 * 5 * 7 * 3, 2 * 4 * 6 * 9 * 3, 2 * 16**3, 1.0,
                                         2 * 1 * 32 * 32, 2 * 4 * 32 * 32]
    assert all(k.label.startswith(f"torch {dtype} GEMM") for k in kernels)
    for a, b, out in recorded:  # numpy's product in float64, from the same operands
        assert out.device.type == "cpu" and out.dtype == a.dtype
        expected = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
        np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=rtol * 10)
    # the thin kernels share one B and the timed loop runs the same product
    assert recorded[-1][1] is recorded[-2][1]
    before = len(recorded)
    kernels[0].run(3)
    assert len(recorded) == before + 3


def test_a_wrong_torch_product_is_refused_before_it_is_timed(monkeypatch):
    def wrong(a, b, out):
        out.zero_()
        return out

    monkeypatch.setattr(torch, "matmul", wrong)
    with pytest.raises(KernelCheckError, match="torch fp32 GEMM 8x8x8: result differs"):
        torch_cpu.shaped_gemm_kernel(8, 8, 8, "fp32")


def test_torch_library_says_what_torch_was_built_with():
    library = identify.torch_library()
    assert library["name"] == "torch" and library["version"] == torch.__version__
    assert library["threads"] == torch.get_num_threads()
    # by hand, from build descriptions written as torch.__config__.show() writes them
    assert identify.torch_blas(
        "  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605\n"
        "  - Intel(R) MKL-DNN v3.12.0 (Git Hash 80afa71)\n"
        "  - Build settings: BLAS_INFO=mkl, USE_MKLDNN=ON") == "MKL 2024.2, oneDNN 3.12.0"
    assert identify.torch_blas("  - Build settings: BLAS_INFO=open, USE_MKLDNN=OFF") == \
        "OpenBLAS"
    assert identify.torch_blas("nothing said") is None


@pytest.fixture
def cpu_only(monkeypatch):
    """This test machine's CPU as the fakes describe it; no GPU library (real torch stays)."""
    monkeypatch.setattr(identify, "cpuinfo_dict", lambda: dict(CPUINFO))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "cupy", None)


def test_probe_library_torch_writes_a_torch_calibration(cpu_only, invoke, stable_probe,
                                                          isolated_user_hwdb):
    result = invoke("probe", "--preset", "tiny", "--library", "torch", "--format", "json",
                    "--save", "box")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = identify.torch_library()
    assert data["library"] == expected
    cal = data["measured"]["calibration"]
    assert cal["version"] == 5 and cal["library"] == {k: v for k, v in expected.items() if v}
    assert set(cal["gemm_efficiency"]) == {"fp32", "fp64"}
    assert "fp32 GEMM through torch" in result.stderr
    from roofline.hardware.catalog import load_hardware

    hw = load_hardware("box")
    assert hw.calibration.library.name == "torch"
    assert hw.stored["measured"]["command"] == "roofline probe --preset tiny --library torch " \
                                               "--save box"
    assert f"through torch {torch.__version__}" in hw.notes


def _numpy_calibrated() -> HardwareSpec:
    data = copy.deepcopy(ENTRY)
    data["calibration"].update(version=4, library={"name": "numpy", "version": "2.4.6",
                                                   "blas": "OpenBLAS 0.3.31", "threads": 2})
    return HardwareSpec.from_dict(data, "box.yaml")


def _captured():
    return capture(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU()),
                   torch.zeros(32, 64), mode="inference", dtype="fp32")


def test_a_captured_model_on_a_numpy_calibration_is_warned_in_every_format():
    report = analyze(_captured(), _numpy_calibrated())
    expected = ("the predicted times are calibrated through numpy 2.4.6 (OpenBLAS 0.3.31; 2 "
                "threads), while this model runs in torch, whose CPU GEMMs can run 1.0-1.7x "
                "apart from numpy's on the same shapes: `roofline probe --library torch --save "
                "NAME` calibrates through torch")
    assert report.warnings == (expected,)
    assert report.to_dict()["warnings"] == [expected]
    assert expected in " ".join(report_table(report).split())
    assert f"- warning: {expected}" in report_markdown(report)
    from roofline.output.report import report_html

    assert "calibrates through torch" in report_html(report)


def test_a_captured_model_on_a_torch_calibration_is_not_warned():
    data = copy.deepcopy(ENTRY)
    data["calibration"].update(version=4, library=TORCH)
    report = analyze(_captured(), HardwareSpec.from_dict(data, "box.yaml"))
    assert report.warnings == () and report.to_dict()["calibration_library"]["name"] == "torch"


FACTORY = '''
import torch
def make():
    return torch.nn.Linear(64, 128), torch.zeros(32, 64)
'''


def test_hw_local_probes_through_torch_for_a_captured_model(cpu_only, invoke, monkeypatch,
                                                           stable_probe, tmp_path):
    (tmp_path / "calibration_factory_example.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    libraries = []
    real = probe.run_probe

    def run(quick, progress, library="numpy"):
        libraries.append(library)
        return real(preset="tiny", library=library)

    monkeypatch.setattr(runner, "run_probe", run)
    result = invoke("analyze", "calibration_factory_example:make", "--hw", "local", "--mode",
                    "inference", "--dtype", "fp32", "--format", "json")
    assert result.exit_code == 0, result.output
    assert libraries == ["torch"] and "quick probe of this machine through torch" in \
        result.stderr
    data = json.loads(result.stdout)
    assert data["calibration_library"]["name"] == "torch" and data["warnings"] == []
    # a model.yaml on the same machine reuses the saved entry: no second probe
    result = invoke("analyze", "examples/mlp-1024-4096-1000.yaml", "--hw", "local", "--dtype",
                    "fp32", "--format", "json")
    assert result.exit_code == 0 and libraries == ["torch"]


def test_measure_on_a_torch_calibration_times_through_torch(recorded):
    from roofline.analysis.measure import default_kernels

    data = copy.deepcopy(ENTRY)
    data["calibration"].update(version=4, library=TORCH)
    report = analyze(_captured(), HardwareSpec.from_dict(data, "box.yaml"))
    make, backend = default_kernels(report)
    kernel = make(32, 128, 64, 1, "fp32")
    assert backend == "torch" and kernel.label == "torch fp32 GEMM 32x128x64"
    assert recorded and recorded[-1][2].shape == (32, 128)  # torch.matmul made the product
