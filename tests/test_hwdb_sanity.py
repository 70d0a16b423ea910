"""A user's hardware entry held to the rules the bundled ones are tested against
(``hardware.sanity``): each figure that looks wrong warned in one line naming the file and the
field, the entry still loaded; the impossible refused. Alias clashes said; text on one
line."""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import pytest
import yaml

from roofline import HwdbWarning, InputError, load_hardware
from roofline.hardware import catalog as database

HWDB = Path(__file__).parent.parent / "hwdb"
V100 = yaml.safe_load((HWDB / "gpu" / "v100-sxm2-16gb.yaml").read_text())
# 1 socket x 32 cores x 3.9 GHz x 2 FMA x (256 / 32 = 8 lanes) x 2 = 3.9936 TFLOP/s fp32,
# half of it fp64; DDR5-4800 x 12 channels x 8 B = 460.8 GB/s at most, 200 given
CPU = {"name": "c1", "kind": "cpu", "vendor": "Acme", "model": "C1", "architecture": "Zen 4",
       "peak_tflops": {"fp64": 1.9968, "fp32": 3.9936}, "bandwidth_gbs": 200,
       "memory": {"type": "DDR5-4800"},
       "cpu": {"sockets": 1, "cores_per_socket": 32, "simd_bits": 256, "fma_units": 2,
               "clock_ghz": 3.9},
       "sources": [{"title": "x", "url": "https://example.com",
                    "covers": ["peak_tflops", "bandwidth_gbs", "memory", "cpu"]}],
       "notes": "made up"}


def _write(folder: Path, data: dict) -> Path:
    path = folder / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _gpu(name: str, **changes) -> dict:
    data = copy.deepcopy(V100)
    data.update(name=name, aliases=[])
    data.update(changes)
    return data


def _cpu(name: str, **changes) -> dict:
    data = copy.deepcopy(CPU)
    data["name"] = name
    for key, value in changes.items():  # "cpu.simd_bits": 100
        *parents, last = key.split(".")
        target = data
        for part in parents:
            target = target[part]
        target[last] = value
    return data


def _warnings_of(path: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_hardware(str(path))
    return [str(w.message) for w in caught if issubclass(w.category, HwdbWarning)]


def test_the_fixtures_themselves_pass(tmp_path):
    assert _warnings_of(_write(tmp_path, _cpu("c1"))) == []
    assert _warnings_of(_write(tmp_path, _gpu("g1"))) == []
    # the V100 16GB's CUDA report, 16,945,512,448 B (hwdb's v100-sxm2-16gb): 1.059x 16e9
    assert _warnings_of(_write(tmp_path, _gpu("g2", memory={
        "type": "HBM2", "capacity_gb": 16, "reported_bytes": 16945512448}))) == []


@pytest.mark.parametrize("data, field, words", [
    # V100: fp16 125 TFLOP/s over 900 GB/s, a ridge of 139; fp32 15.7 TFLOP/s
    # GFLOP/s typed as TFLOP/s: 15700 / 900 GB/s = 17,444 FLOP/B (~17.4 FLOP per byte x 1000)
    (_gpu("g1", peak_tflops={**V100["peak_tflops"], "fp32": 15700}), "peak_tflops.fp32",
     "15700 over bandwidth_gbs 900 is a ridge of 1.744e+04 FLOP/B, no device's (expected 0.1 to "
     "2000): a figure in GFLOP/s or TB/s?"),
    # fp32 at 130 TFLOP/s (a ridge of 144, in range): above fp16's 125 on Tensor Cores
    (_gpu("g1", peak_tflops={**V100["peak_tflops"], "fp32": 130}), "peak_tflops.fp16",
     "125 is below fp32's 130, where the Tensor Cores (gpu.tiles) run fp16 faster"),
    # fp16 at 10: 10 / 900 GB/s = 11.1 FLOP/B, no Tensor-Core GPU's (the order rule then
    # says nothing more of the same figure)
    (_gpu("g1", peak_tflops={**V100["peak_tflops"], "fp16": 10}), "peak_tflops.fp16",
     "10 over bandwidth_gbs 900 is a ridge of 11.11 FLOP/B, outside 50 to 700, where a "
     "Tensor-Core GPU's fp16 ridge lies"),
    (_gpu("g1", gpu={**V100["gpu"], "sms": 100000}), "gpu.sms", "100000 SMs; GPUs have 1 to 1024"),
    (_gpu("g1", gpu={**V100["gpu"], "boost_clock_ghz": 0.001}), "gpu.boost_clock_ghz",
     "0.001 GHz; GPUs run at 0.2 to 5"),
    # HBM2 reaches 2050 GB/s at most (5 stacks x 410); 125 / 2100 = 59.5 FLOP/B stays in range
    (_gpu("g1", bandwidth_gbs=2100), "bandwidth_gbs", "2100 GB/s is more than HBM2 reaches (2050)"),
    # deviceQuery's "16280 MBytes (17070817280 bytes)": the MBytes copied, 16,280 / 16e9 =
    # 1.0175e-06 of the capacity; a digit too many, 170,708,172,800 / 16e9 = 10.67 (CUDA
    # reports 0.85 to 1.1x capacity_gb x 10^9: at most 2^30 / 10^9 = 1.074)
    (_gpu("g1", memory={"type": "HBM2", "capacity_gb": 16, "reported_bytes": 16280}),
     "memory.reported_bytes", "16,280 B is 1.02e-06x capacity_gb 16 (x 10^9 B), where CUDA "
     "reports 0.85 to 1.1x it: deviceQuery's bytes, in brackets, not its MBytes?"),
    (_gpu("g1", memory={"type": "HBM2", "capacity_gb": 16, "reported_bytes": 170708172800}),
     "memory.reported_bytes", "170,708,172,800 B is 10.7x capacity_gb 16 (x 10^9 B), where "
     "CUDA reports 0.85 to 1.1x it: deviceQuery's bytes, in brackets, not its MBytes?"),
    # 400 TFLOP/s against 3.9936 from the cpu block
    (_cpu("c2", **{"peak_tflops.fp32": 400}), "peak_tflops.fp32",
     "400 TFLOP/s is not what the cpu block gives, 1 x 32 cores x 3.9 GHz x 2 FMA x 8 lanes x 2 "
     "= 3.994"),
    (_cpu("c2", **{"cpu.simd_bits": 100}), "cpu.simd_bits",
     "100 is no vector width (128 SSE or NEON, 256 AVX2, 512 AVX-512, SVE a multiple of 128 up "
     "to 2048)"),
    (_cpu("c2", **{"cpu.fma_units": 9}), "cpu.fma_units",
     "9 vector FMA units a core; cores have 1 to 4"),
    # fp64 8 against fp32 3.9936: the cpu block's 1.997 is the more specific rule
    (_cpu("c2", **{"peak_tflops.fp64": 8}), "peak_tflops.fp64",
     "8 TFLOP/s is not what the cpu block gives, 1 x 32 cores x 3.9 GHz x 2 FMA x 8 lanes x 2 x "
     "0.5 (fp64) = 1.997"),
    # 12 x 4800 MT/s x 8 B = 460.8 GB/s
    (_cpu("c2", bandwidth_gbs=1000), "bandwidth_gbs",
     "1000 GB/s is more than 1 socket(s) x 12 channels of DDR5-4800 x 8 B reach (460.8)"),
])
def test_a_figure_that_looks_wrong_warns_once_naming_file_and_field(tmp_path, data, field,
                                                                    words):
    path = _write(tmp_path, data)
    assert _warnings_of(path) == [f"{path}: {field}: {words}"]


MEASURED = {
    "name": "box", "kind": "cpu", "vendor": "AMD", "model": "AMD EPYC", "architecture": "x",
    "origin": "measured", "peak_tflops": {"fp32": 0.1457, "fp64": 0.06624},
    "bandwidth_gbs": 17.49,
    "cpu": {"sockets": 1, "cores_per_socket": 2, "simd_bits": 256, "fma_units": 2,
            "clock_ghz": 3.15},
    # 1 x 2 cores x 3.15 GHz x 2 FMA x 8 lanes x 2 = 0.2016 TFLOP/s fp32
    "theoretical": {"peak_tflops": {"fp32": 0.2016, "fp64": 0.1008}},
    "calibration": {"version": 5, "call_overhead_s": 2.4e-6, "gemm_efficiency": {
        # 1.384 = 0.2016 / 0.1457: a GEMM the probe held at the ceiling, as it saves one
        "fp32": {"square": {"32": 1.384, "64": 0.61}, "thin": {"1": 0.09}, "thin_nk": 1024,
                 "peak_n": 1536}}},
    "measured": {"machine": "vm: AMD EPYC, 2 cores, Linux"},
    "sources": [{"title": "probe", "command": "roofline probe",
                 "covers": ["peak_tflops", "bandwidth_gbs", "cpu"]}],
    "notes": "a probe's entry",
}


def _measured(**changes) -> dict:
    data = copy.deepcopy(MEASURED)
    for key, value in changes.items():
        *parents, last = key.split(".")
        target = data
        for part in parents:
            target = target[part]
        target[last] = value
    return data


def test_a_probes_entry_held_at_the_ceiling_loads_without_a_warning(tmp_path):
    assert _warnings_of(_write(tmp_path, _measured())) == []


@pytest.mark.parametrize("changes, field, words", [
    # measured 0.1457 over a theoretical 0.13: 1.12x, more than the probe's 1.05 (forced);
    # the probe's floor then held each GEMM at the measured peak, an efficiency of 1 at most
    ({"theoretical.peak_tflops.fp32": 0.13, "calibration.gemm_efficiency.fp32.square.32": 1.0},
     "peak_tflops.fp32",
     "measured 0.1457 is 1.12x the theoretical ceiling 0.13 (more than 1.05x): one of the two is "
     "wrong"),
    ({"calibration.call_overhead_s": 100}, "calibration.call_overhead_s",
     "100 s a call; a call or kernel launch costs microseconds (expected at most 0.01 s): a "
     "figure in another unit?"),
])
def test_a_measured_figure_that_looks_wrong_warns(tmp_path, changes, field, words):
    path = _write(tmp_path, _measured(**changes))
    assert _warnings_of(path) == [f"{path}: {field}: {words}"]


def test_an_efficiency_the_probe_never_saves_is_refused(tmp_path):
    # the probe floors a GEMM's time at its work over max(ceiling, peak): an efficiency at
    # most 0.2016 / 0.1457 = 1.384, with 5 % for rounding 1.453; 50 is 36x the ceiling
    path = _write(tmp_path, _measured(**{"calibration.gemm_efficiency.fp32.square.64": 50}))
    with pytest.raises(InputError) as info:
        load_hardware(str(path))
    assert str(info.value) == (
        f"{path}: calibration.gemm_efficiency.fp32.square.64: 50 is above 1.45 (1.05 x the "
        f"theoretical 0.2016 over the measured 0.1457 TFLOP/s), faster than the GEMM can run: "
        f"the probe floors its time at its work over the ceiling")


def test_an_old_calibration_over_the_cap_still_loads_with_a_warning(tmp_path):
    # version 2 (probe method 4) had no floor: such blocks loaded before, and still do
    data = _measured(**{"calibration.version": 2, "calibration.gemm_efficiency.fp32.square.64": 50})
    path = _write(tmp_path, data)
    assert _warnings_of(path) == [
        f"{path}: calibration.gemm_efficiency.fp32.square.64: 50 is above 1.45 (1.05 x the "
        f"theoretical 0.2016 over the measured 0.1457 TFLOP/s), faster than the GEMM can run: "
        f"the probe floors its time at its work over the ceiling"]


def test_the_cli_prints_each_doubt_as_one_warning_line(isolated_user_hwdb, invoke):
    path = _write(isolated_user_hwdb, _gpu("g1", peak_tflops={**V100["peak_tflops"],
                                                               "fp32": 15700}))
    database.clear_cache()
    result = invoke("hw", "show", "g1")
    assert result.exit_code == 0
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Warning: {path}: peak_tflops.fp32: 15700 over bandwidth_gbs 900 ")


# --- aliases ------------------------------------------------------------------------------


def _resolved(name: str) -> str:
    return database.catalog().resolve(name).name


def test_a_user_alias_taking_a_bundled_alias_is_said(isolated_user_hwdb):
    path = _write(isolated_user_hwdb, _gpu("my-gpu", aliases=["a100"]))
    database.clear_cache()
    with pytest.warns(HwdbWarning) as caught:
        assert _resolved("a100") == "my-gpu"  # the user's file picks, as before
    assert [str(w.message) for w in caught] == [
        f"{path}: aliases[0]: 'a100' is also bundled a100-sxm4-80gb's alias; the name a100 now "
        f"picks this entry, my-gpu (rename the alias to keep a100-sxm4-80gb)"]


def test_two_user_entries_declaring_one_alias_name_both_files(isolated_user_hwdb):
    first = _write(isolated_user_hwdb, _gpu("gpu-a", aliases=["box"]))
    second = _write(isolated_user_hwdb, _gpu("gpu-b", aliases=["box"]))
    database.clear_cache()
    with pytest.warns(HwdbWarning) as caught:
        assert _resolved("box") == "gpu-b"  # files are read in sorted order: the last wins
    assert [str(w.message) for w in caught] == [
        f"{second}: aliases[0]: 'box' is also {first}'s gpu-a's alias; the name box now picks "
        f"this entry, gpu-b (rename the alias to keep gpu-a)"]


def test_an_alias_that_is_another_entrys_name_is_said_ignored(isolated_user_hwdb):
    path = _write(isolated_user_hwdb, _gpu("my-gpu", aliases=["t4"]))
    database.clear_cache()
    with pytest.warns(HwdbWarning) as caught:
        assert _resolved("t4") == "t4"  # a name wins over an alias
    assert [str(w.message) for w in caught] == [
        f"{path}: aliases: 't4' is the name of the entry t4 (bundled); the name picks that "
        f"entry, not my-gpu: this alias is ignored"]


def test_a_user_entry_named_as_a_bundled_alias_is_said(isolated_user_hwdb):
    path = _write(isolated_user_hwdb, _gpu("v100"))
    database.clear_cache()
    with pytest.warns(HwdbWarning) as caught:
        assert _resolved("v100") == "v100"
    assert [str(w.message) for w in caught] == [
        f"{path}: name: 'v100' is also bundled v100-sxm2-16gb's alias; the name v100 now picks "
        f"this entry, not v100-sxm2-16gb"]


def test_an_override_keeping_its_own_alias_is_not_a_clash(isolated_user_hwdb, recwarn):
    _write(isolated_user_hwdb, _gpu("v100-sxm2-16gb", aliases=["v100"], bandwidth_gbs=800))
    database.clear_cache()
    assert database.catalog().resolve("v100").bandwidth_gbs == 800
    assert not [w for w in recwarn if issubclass(w.category, HwdbWarning)]


# --- text on one line ---------------------------------------------------------------------


def test_a_line_break_in_an_entrys_text_is_refused_in_one_line(tmp_path):
    path = _write(tmp_path, _gpu("g1", vendor="Acme\nInjected: line"))
    with pytest.raises(InputError) as info:
        load_hardware(str(path))
    assert str(info.value) == (f"{path}: vendor: text holds a line break, which only notes "
                               f"may: give it on one line")
    path = _write(tmp_path, _gpu("g2", sources=[{**V100["sources"][0], "title": "a\tb"},
                                             *V100["sources"][1:]]))
    with pytest.raises(InputError, match=r"g2.yaml: sources\[0\].title: text holds a tab"):
        load_hardware(str(path))
    # notes may run over lines (a folded `notes: >` ends in one)
    assert load_hardware(str(_write(tmp_path, _gpu("g3", notes="one\ntwo\n")))).notes
