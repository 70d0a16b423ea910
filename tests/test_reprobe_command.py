"""Every sentence that tells a user to probe an entry again names that entry, and the library its
calibration was timed through (``output.times.reprobe_command``).

Found on the CPU tour (2026-11-28): `analyze ... --hw mybox --measure` flagged GEMMs above their
roof and said "rerun `roofline probe --save local --force`", which writes a new entry `local`
and leaves `mybox`, the ceiling it called too low, as it was. An entry calibrated through torch
was told to re-probe without `--library torch`, which would calibrate it through numpy's BLAS."""

from __future__ import annotations

import copy

from roofline.analysis import measure as measure_mod
from roofline.analysis.report import analyze
from roofline.hardware.spec import HardwareSpec
from roofline.kernels.cpu import Kernel
from roofline.model.network import load_network
from roofline.output.times import basis_sentence, beats_roof_notes, forced_warning

HOST = "testbox"
ENTRY = {
    "name": "mybox", "kind": "cpu", "vendor": "AMD", "model": "AMD EPYC", "architecture": "x",
    "origin": "measured", "peak_tflops": {"fp64": 0.05, "fp32": 0.1}, "bandwidth_gbs": 20.0,
    "llc_mb": 1.0,
    "cpu": {"sockets": 1, "cores_per_socket": 2, "simd_bits": 256, "fma_units": 2,
            "clock_ghz": 3.0},
    "measured": {"machine": f"{HOST}: AMD EPYC, 2 cores, Linux",
                 "forced_past": [{"check": "shared_machine", "reason": "busy"}]},
    "calibration": {"version": 4, "call_overhead_s": 1e-6,
                    "library": {"name": "torch", "version": "2.13.0+cpu", "blas": "MKL",
                                "threads": 2},
                    "gemm_efficiency": {
                        "fp32": {"square": {"32": 0.25, "128": 0.5}, "thin": {"1": 0.1},
                                 "thin_nk": 1024, "peak_n": 512,
                                 "c_write": {"passes": 2.0, "m": 4096, "n": 4096, "k": 16}},
                        "fp64": {"square": {"32": 0.5}, "thin": {"1": 0.5}, "thin_nk": 64,
                                 "peak_n": 64,
                                 "c_write": {"passes": 2.0, "m": 4096, "n": 4096, "k": 16}}}},
    "sources": [{"title": "probe", "command": "roofline probe --library torch --save mybox",
                 "covers": ["peak_tflops", "bandwidth_gbs", "llc_mb", "cpu"]}],
    "notes": "test entry",
}
TORCH_AGAIN = "`roofline probe --library torch --save mybox --force`"
NUMPY_AGAIN = "`roofline probe --save mybox --force`"


def spec(library: str = "torch") -> HardwareSpec:
    data = copy.deepcopy(ENTRY)
    data["calibration"]["library"]["name"] = library
    return HardwareSpec.from_dict(data, "mybox.yaml")


def test_beats_roof_names_the_entry_measured_and_its_library():
    """MM1 of the MLP example (512 x 4096 x 1024, fp32) timed at half its roof reads 2.00x:
    roof = 2*512*4096*1024 FLOP / 0.1e12 = 42.9 ms (compute-bound: intensity 157.5 FLOP/B
    against a ridge of 0.1e12 / 20e9 = 5), measured 21.5 ms, 42.9 / 21.5 = 2.00."""
    hw = spec()
    report = analyze(load_network("examples/mlp-1024-4096-1000.yaml")
                     .with_overrides(dtype="fp32"), hw)
    roof = {(r.gemm.m, r.gemm.n, r.gemm.k): r.time_s for r in report.results}
    assert roof[(512, 4096, 1024)] == 2 * 512 * 4096 * 1024 / 0.1e12
    per_call = {shape: t * 2 for shape, t in roof.items()}
    per_call[(512, 4096, 1024)] = roof[(512, 4096, 1024)] / 2

    class Clock:
        now = 0.0

        def __call__(self):
            return self.now

    clock = Clock()

    def make(m, n, k, g, dtype):
        def run(loops):
            clock.now += loops * per_call[(m, n, k)]
        return Kernel("fake", run, 2.0 * m * n * k * g, "FLOP")

    measured = measure_mod.measure_report(report, lambda _: None, make, "fake", clock, HOST)
    assert beats_roof_notes(measured) == [
        f"MM1: measured 2.00x its roof: the ceiling is too low (rerun {TORCH_AGAIN}) or the "
        f"operands sat in a cache the DRAM roof does not count"]


def test_forced_warning_keeps_the_calibrations_library():
    assert forced_warning(spec()).endswith(f"{TORCH_AGAIN} on an idle machine replaces them")
    assert forced_warning(spec("numpy")).endswith(
        f"{NUMPY_AGAIN} on an idle machine replaces them")


def test_an_uncalibrated_measured_entry_names_itself():
    data = copy.deepcopy(ENTRY)
    del data["calibration"]
    hw = HardwareSpec.from_dict(data, "mybox.yaml")
    assert f"re-run {NUMPY_AGAIN}" in basis_sentence(hw)
