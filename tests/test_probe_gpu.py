"""The GPU path against fake pynvml and torch modules (numpy underneath).

This checks the wiring at the library boundary only (the torch path ran once on a real H100:
docs/probe.md).
"""

from __future__ import annotations

import sys

import pytest
from _probe_fakes import fake_torch

from roofline.api import analyze_model
from roofline.hardware.spec import HardwareSpec
from roofline.kernels import gpu as gpu_kernels
from roofline.probe import run_probe, save_entry


def test_torch_backend_kernels(fake_gpu):
    backend, reason = gpu_kernels.gpu_backend()
    assert reason is None and isinstance(backend, gpu_kernels.TorchBackend)
    gemm = backend.gemm(8, "tf32")
    assert gemm.work == 2 * 8**3
    assert fake_gpu.backends.cuda.matmul.allow_tf32 is True
    backend.gemm(8, "fp32")
    assert fake_gpu.backends.cuda.matmul.allow_tf32 is False  # plain fp32 is not TF32
    copy = backend.device_copy(4096)
    assert copy.work == 2 * 4096  # read + write
    h2d = backend.host_to_device(4096)
    assert h2d.work == 4096
    syncs = len(fake_gpu.syncs)
    h2d.run(3)
    assert len(fake_gpu.syncs) == syncs + 1  # one synchronize per timed value


def test_no_gpu_library_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "cupy", None)
    backend, reason = gpu_kernels.gpu_backend()
    assert backend is None
    assert "torch is not installed" in reason and "roofline[gpu]" in reason


def test_torch_without_cuda(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=False))
    monkeypatch.setitem(sys.modules, "cupy", None)
    backend, reason = gpu_kernels.gpu_backend()
    assert backend is None and "sees no CUDA device" in reason
    cpu_backend, _ = gpu_kernels.cpu_lowp_backend()
    assert cpu_backend.dtypes == ("bf16", "fp16")
    cpu_backend.gemm(8, "bf16").run(1)


def test_probe_measures_the_gpu_and_saves_a_gpu_entry(fake_gpu, stable_probe):
    result = run_probe(preset="tiny")
    gpu = result.measured["gpu"]
    assert set(gpu["gemm_gflops"]) == {"fp64", "fp32", "tf32", "fp16", "bf16"}
    assert set(gpu["bandwidth_gbs"]) == {"device", "host_to_device"}
    assert result.gpu_matches == {0: "a100-sxm4-80gb"}
    assert result.to_dict()["gpus"][0]["hwdb_match"] == "a100-sxm4-80gb"
    assert result.theoretical["gpu"]["bandwidth_gbs"]["device"] == pytest.approx(2039.04)
    # torch on the CPU (the fake) also ran the CPU bf16 GEMM (AVX512_BF16 and AMX-BF16 are
    # among the fake CPU's flags); fp16 has no native unit there (no AVX512_FP16, no AMX-FP16)
    assert "bf16" in result.measured["gemm_gflops"]
    assert "fp16" not in result.measured["gemm_gflops"]
    (skipped,) = [s for s in result.not_measured if s.figure == "gemm_gflops.fp16"]
    assert skipped.reason.code == "no_native_unit"

    entry = result.to_hardware_dict("my-a100")
    assert entry["kind"] == "gpu" and entry["origin"] == "measured"
    # the tiles and L2 the GPU GEMM model needs come from the matching datasheet entry
    assert entry["gpu"] == {"sms": 108, "boost_clock_ghz": 1.41,
                            "tiles": [[256, 128], [128, 256], [128, 128], [64, 64]]}
    assert entry["llc_mb"] == 40
    assert {"llc_mb", "alignment"} <= set(entry["sources"][1]["covers"])
    assert "llc_mb" not in entry["sources"][0]["covers"]
    assert entry["host_link"]["generation"] == 4 and entry["host_link"]["lanes"] == 16
    assert entry["alignment"]["fp16"]["multiple"] == 8  # copied from the datasheet entry
    assert entry["theoretical"]["peak_tflops"]["fp16"] == 312
    spec = HardwareSpec.from_dict(entry, "probe")
    assert spec.peak_tflops["fp16"] == pytest.approx(gpu["gemm_gflops"]["fp16"] / 1000, rel=1e-3)

    save_entry(result, "my-a100")
    report = analyze_model("examples/mlp-1024-4096-1000.yaml", "my-a100")
    assert report.hardware.origin == "measured"


def test_a_gpu_probe_renders_in_every_format(fake_gpu, stable_probe):
    """Seen on a real H100 (torch 2.11): ``probe --format json`` died with "Object of type Note
    is not JSON serializable", the GPU's assumptions left as notes inside ``theoretical.gpu``."""
    import json

    from roofline.output.probe import PROBE_FORMATS

    result = run_probe(preset="tiny")
    data = json.loads(PROBE_FORMATS["json"](result))
    assert data["theoretical"]["gpu"]["bandwidth_gbs"]["device"] == pytest.approx(2039.04)
    assert "assumptions" not in data["theoretical"]["gpu"]
    assert any("a100-sxm4-80gb" in text for text in data["assumptions"])  # said once, as text
    assert "GPU" in PROBE_FORMATS["table"](result)
    assert "<html" in PROBE_FORMATS["html"](result, command="roofline probe")


def test_a_gpu_entry_takes_the_l2_the_device_reports(fake_gpu, stable_probe):
    """A lent H200 reported a 60 MiB L2 where its datasheet entry assumed H100's 50: the probe
    saves the device's own figure (torch's ``L2_cache_size``) and says where it came from."""
    import types

    fake_gpu.cuda.get_device_properties = lambda i: types.SimpleNamespace(
        multi_processor_count=108, total_memory=80 * 10**9, L2_cache_size=62_914_560)
    entry = run_probe(preset="tiny").to_hardware_dict("my-gpu")
    assert entry["llc_mb"] == 60
    probe_source, datasheet_source = entry["sources"]
    assert "llc_mb" in probe_source["covers"] and datasheet_source["covers"] == ["alignment"]
    assert "the L2 the device reports" in entry["notes"]
    assert entry["gpu"]["tiles"]  # still the matching datasheet entry's
    assert HardwareSpec.from_dict(entry, "probe").llc_mb == 60


def test_a_gpu_entry_keeps_the_threads_its_datasheet_entry_says_an_sm_holds(
        fake_gpu, stable_probe, monkeypatch):
    """torch's reduce kernel sizes its grid by the threads an SM holds (analysis.gpu_reduce): an
    A10's 1536 (GA10x) carries into the entry its probe saves, as its tiles do; an A100's 2048
    is the default and stays unsaid."""
    import sys

    from _probe_fakes import fake_pynvml

    assert "resident_threads" not in run_probe(preset="tiny").to_hardware_dict("a")["gpu"]
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml("NVIDIA A10"))
    entry = run_probe(preset="tiny").to_hardware_dict("my-a10")
    assert entry["gpu"]["resident_threads"] == 1536
    assert HardwareSpec.from_dict(entry, "probe").gpu.resident_threads == 1536
    assert "pcie_p2p" not in entry["gpu"]


def test_a_geforce_entry_keeps_that_its_boards_cannot_read_each_other_over_pcie(
        fake_gpu, stable_probe, monkeypatch):
    """Two RTX 4090s have no peer-to-peer access (the datasheet entry's gpu.pcie_p2p, from
    deviceQuery): a probe of one saves it with the entry, so --tp on the probed entry runs
    NCCL's ring through host memory as on the bundled one."""
    import sys

    from _probe_fakes import fake_pynvml

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml("NVIDIA GeForce RTX 4090"))
    entry = run_probe(preset="tiny").to_hardware_dict("my-4090")
    assert entry["gpu"]["pcie_p2p"] is False
    assert HardwareSpec.from_dict(entry, "probe").gpu.pcie_p2p is False
