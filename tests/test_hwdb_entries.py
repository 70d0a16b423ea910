"""Every bundled entry through the loader and the sanity rules; user entries and loader errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from roofline import HwdbWarning, InputError, UnknownHardwareError, list_hardware, load_hardware
from roofline.hardware import catalog as database
from roofline.hardware import sanity
from roofline.hardware.spec import FIGURE_KEYS

HWDB = Path(__file__).parent.parent / "hwdb"
FILES = sorted(HWDB.rglob("*.yaml"))
NAMES = [p.stem for p in FILES]

@pytest.mark.parametrize("path", FILES, ids=NAMES)
def test_entry_loads_and_is_named_after_its_file(path):
    spec = load_hardware(path.stem)
    assert spec.name == path.stem
    assert spec.location == "bundled"
    # a published source (https), or a reading this project took on the device itself, whose
    # command and data are in the repository (H200's L2: benchmarks/data/h200_live_env.json;
    # the H100's and H200's memory as CUDA reports it)
    assert all((s.url and s.url.startswith("https://")) or s.command for s in spec.sources)
    assert any(s.url for s in spec.sources)
    for source in spec.sources:
        if source.command:
            assert "gpu_measure.py" in source.command
            assert source.covers in (("llc_mb",), ("memory",))
    if spec.memory_reported_bytes is not None:
        # the datasheet's GB are binary on these boards, less what the driver reserves (ECC
        # on a GDDR6 card keeps up to 1/16 of it): the reading lies under the binary reading
        # of the datasheet's figure and at most 7% under its decimal one (an L4's "24GB" is
        # 23,570,219,008 B as CUDA reports it, 1.8% under 24 x 10^9; an A100 80GB's 6% over)
        assert spec.memory_capacity_gb is not None
        gb = spec.memory_capacity_gb
        assert 0.93 * gb * 1e9 < spec.memory_reported_bytes <= gb * 2**30
        assert spec.memory_capacity_bytes == spec.memory_reported_bytes


@pytest.mark.parametrize("name", NAMES)
def test_bundled_entries_pass_every_sanity_rule(name):
    # the rules a user's entry is warned by (hardware.sanity: ridges, fp64 under fp32, matrix
    # engine over vector, sparse twice dense, bandwidth within the memory type, alignment only
    # for a dtype with a peak, CPU peaks from cores x clock x units, field ranges): none
    # trips on a bundled entry, so none warns when the bundled database loads
    spec = load_hardware(name)
    assert sanity.doubts(spec) == []
    low, high = sanity.main_ridge_range(spec)
    # a GPU without Tensor Cores (Pascal) has a CUDA-core ridge, like a CPU's; Maxwell has no
    # fp16 entry: its ridge is the fp32 one
    main = sanity.main_dtype(spec)
    assert main == ("fp16" if spec.kind == "gpu" and "fp16" in spec.peak_tflops else "fp32")
    assert low <= spec.ridge(main) <= high, spec.ridge(main)


def test_the_bundled_database_loads_without_a_warning(recwarn):
    database.clear_cache()
    list_hardware()
    assert [str(w.message) for w in recwarn if issubclass(w.category, HwdbWarning)] == []


GPU_NAMES = [n for n, p in zip(NAMES, FILES) if p.parent.name == "gpu"]
# Datasheet capacities in GB (the figure on the box): what `analyze` checks a step against
CAPACITY_GB = {"a10": 24, "a100-pcie-40gb": 40, "a100-pcie-80gb": 80, "a100-sxm4-40gb": 40,
               "a100-sxm4-80gb": 80, "h100-pcie-80gb": 80, "h100-sxm5-80gb": 80,
               "gtx-1080-ti": 11, "h200-sxm-141gb": 141, "l4": 24, "l40s": 48, "p100-pcie-16gb": 16,
               "t4": 16, "titan-xp": 12, "v100-pcie-16gb": 16, "m40-24gb": 24,
               "gtx-titan-x": 12, "titan-x-pascal": 12,
               "v100-sxm2-16gb": 16, "v100-sxm2-32gb": 32, "b200-sxm-180gb": 180,
               "rtx-4090": 24, "rtx-3090": 24, "rtx-a6000": 48, "rtx-6000-ada": 48}


MIB = 2**20
# What CUDA reports (totalGlobalMem), as each entry's source printed it: read on lent GPUs
# (H100, H200: benchmarks/data/), else a public paste of deviceQuery (its "N MBytes (B bytes)",
# the bytes exact) or of a tool printing totalGlobalMem in MiB (to within 1 MiB). The entries
# not here have no trustworthy public reading found and keep the datasheet's GB x 10^9.
REPORTED_BYTES = {
    "h100-sxm5-80gb": 85_017_493_504, "h200-sxm-141gb": 150_109_880_320,
    # deviceQuery, driver 12.5: "81158 MBytes (85100068864 bytes)" (thamada/nvidia-smi)
    "a100-sxm4-80gb": 85_100_068_864,
    # deviceQuery, driver 12.2: "40339 MBytes (42298834944 bytes)" (bottlerocket PR 3873)
    "a100-sxm4-40gb": 42_298_834_944,
    # mixbench-cuda, driver 12.3: "Total global mem: 81049 MB", MiB (ekondis/mixbench#47)
    "a100-pcie-80gb": 81_049 * MIB,
    # deviceQuery, driver 12.4: "22478 MBytes (23570219008 bytes)" (thamada/nvidia-smi)
    "l4": 23_570_219_008,
    # deviceQuery, driver 12.4: "45589 MBytes (47803596800 bytes)" (thamada/nvidia-smi)
    "l40s": 47_803_596_800,
    # deviceQuery, driver 11.0: "15110 MBytes (15843721216 bytes)" (chiemon.github.io)
    "t4": 15_843_721_216,
    # collect_device (totalGlobalMem), driver 12.2: "21.99 GBytes (23609475072 bytes)"
    "a10": 23_609_475_072,
    # deviceQuery, driver 9.0: "11172 MBytes (11715084288 bytes)" (ethminer#536)
    "gtx-1080-ti": 11_715_084_288,
    # deviceQuery, driver 10.1: "12205 MBytes (12797607936 bytes)" (gpgpu-sim#169)
    "gtx-titan-x": 12_797_607_936,
    # deviceQuery, driver 11.2: "16281 MBytes (17071734784 bytes)" (docker-training-neic)
    "p100-pcie-16gb": 17_071_734_784,
    # deviceQuery, driver 10.2: "16160 MBytes (16945512448 bytes)" (ULHPC/ulhpc-docs)
    "v100-sxm2-16gb": 16_945_512_448,
    # deviceQuery, driver 11.2: "32510 MBytes (34089730048 bytes)" (infn-esc/esc21)
    "v100-sxm2-32gb": 34_089_730_048,
    # deviceQuery, driver 12.4: "24210 MBytes (25386352640 bytes)" (thamada/nvidia-smi)
    "rtx-4090": 25_386_352_640,
    # deviceQuery, driver 12.6: "24154 MBytes (25327697920 bytes)" (thamada/nvidia-smi)
    "rtx-3090": 25_327_697_920,
    # deviceQuery, driver 12.4, ECC on: "45619 MBytes (47834660864 bytes)" (thamada/gls)
    "rtx-a6000": 47_834_660_864,
    # deviceQuery, driver 12.4, ECC off: "48640 MBytes (51002867712 bytes)" (thamada/nvidia-smi)
    "rtx-6000-ada": 51_002_867_712,
}


@pytest.mark.parametrize("name", sorted(set(REPORTED_BYTES) - {"h100-sxm5-80gb",
                                                                "h200-sxm-141gb"}))
def test_each_public_memory_reading_is_sourced_with_the_figure_it_printed(name):
    # a public reading names, in its memory source's title, the figure printed there, and
    # links the page or thread it was printed on; the figure's MiB agree with the bytes
    # (deviceQuery rounds bytes / 2^20 to whole MBytes; mixbench prints whole MiB)
    spec = load_hardware(name)
    reading = REPORTED_BYTES[name]
    assert spec.memory_reported_bytes == reading
    sources = [s for s in spec.sources
               if s.covers == ("memory",) and "global mem" in s.title.lower()]
    assert len(sources) == 1, [s.title for s in spec.sources]
    assert sources[0].url and sources[0].url.startswith("https://")
    # deviceQuery prints "N MBytes (B bytes)": B is the reading; mixbench prints whole MiB
    assert str(reading) in sources[0].title or f"{reading // MIB} MB" in sources[0].title


@pytest.mark.parametrize("name", GPU_NAMES)
def test_every_gpu_entry_has_its_memory_capacity_with_a_source(name):
    spec = load_hardware(name)
    assert spec.memory_capacity_gb == CAPACITY_GB[name]
    # GB = 10^9 B, but where CUDA's own report was read on the device (a lent H100 and H200:
    # benchmarks/data/h100_live_hf_env.json, h200_live_env.json)
    assert spec.memory_capacity_bytes == REPORTED_BYTES.get(name, CAPACITY_GB[name] * 1e9)
    assert any("memory" in s.covers for s in spec.sources)


def test_every_bundled_gpu_is_in_the_capacity_table():
    assert sorted(CAPACITY_GB) == sorted(GPU_NAMES)


@pytest.mark.parametrize("name", [n for n, p in zip(NAMES, FILES) if p.parent.name == "cpu"])
def test_cpu_entries_may_leave_the_capacity_unset(name):
    assert load_hardware(name).memory_capacity_bytes is None


CPU_NAMES = [n for n, p in zip(NAMES, FILES) if p.parent.name == "cpu"]


@pytest.mark.parametrize("name", CPU_NAMES)
def test_cpu_peaks_follow_from_cores_clock_and_units(name):
    # the loader warns past sanity.CPU_PEAK_TOLERANCE (10 %); bundled entries agree to 0.1 %
    spec = load_hardware(name)
    for key, figures, vector_only in (("peak", spec.peak_tflops, False),
                                      ("vector", spec.vector_tflops, True)):
        for dtype, peak in figures.items():
            expected = sanity.expected_cpu_tflops(spec.cpu, dtype, vector_only)
            assert peak == pytest.approx(expected, rel=1e-3), (key, dtype)


@pytest.mark.parametrize("name", CPU_NAMES)
def test_cpu_entries_give_the_clock_per_isa_with_a_source(name):
    cpu = load_hardware(name).cpu
    assert "vector" in cpu.peak_clock
    assert ("amx" in cpu.peak_clock) == bool(cpu.amx_ops_per_cycle)
    for isa, kinds in cpu.clocks.items():
        for kind, clock in kinds.items():
            assert clock.source and clock.tag in ("R", "3P", "D", "unconfirmed"), (isa, kind)
    isa, kind = cpu.peak_clock["vector"]
    assert isa in (("avx512",) if cpu.simd_bits == 512 else ("avx2", "avx512"))


def test_aliases_are_unique_and_resolve():
    seen = {}
    for spec in list_hardware():
        for alias in spec.aliases:
            assert alias not in seen and alias not in NAMES
            seen[alias] = spec.name
    assert load_hardware("v100").name == "v100-sxm2-16gb"
    assert load_hardware("A100").name == "a100-sxm4-80gb"
    assert load_hardware("8180").name == "xeon-platinum-8180"


def test_list_filters_by_kind():
    assert {s.kind for s in list_hardware("gpu")} == {"gpu"}
    assert len(list_hardware("cpu")) + len(list_hardware("gpu")) == len(FILES)


def test_unknown_name_lists_close_matches():
    with pytest.raises(UnknownHardwareError, match="did you mean h100-sxm5-80gb"):
        load_hardware("h100-sxm5")



@pytest.mark.parametrize("given, meant", [("nvidia-l4", "l4"), ("NVIDIA Tesla V100", "v100"),
                                          ("amd-epyc-9654", "epyc-9654")])
def test_a_name_with_its_vendor_in_front_is_matched_without_it(given, meant):
    # a new user's --hw nvidia-l4 got no suggestion: "l4" is too short for a close match of it
    with pytest.raises(UnknownHardwareError, match=rf"did you mean {meant}[-a-z0-9]*\?"):
        load_hardware(given)


CPU = {"sockets": 1, "cores_per_socket": 4, "simd_bits": 512, "fma_units": 2,
       "clocks": {"avx512": {"base": {"ghz": 2.0, "tag": "R", "source": "x"}}},
       "peak_clock": {"vector": "avx512.base"}}
AS_CPU = {"kind": "cpu", "sources": [{"title": "x", "url": "https://x", "covers": list(FIGURE_KEYS)}]}


def _user_entry(folder: Path, name: str, **changes) -> Path:
    data = yaml.safe_load((HWDB / "gpu" / "v100-sxm2-16gb.yaml").read_text())
    data.update(name=name, aliases=[], **changes)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_user_entry_is_added_and_says_where_it_came_from(isolated_user_hwdb):
    _user_entry(isolated_user_hwdb, "my-gpu", bandwidth_gbs=1000.0)
    database.clear_cache()
    spec = load_hardware("my-gpu")
    assert spec.bandwidth_gbs == 1000.0
    assert spec.location == f"user ({isolated_user_hwdb / 'my-gpu.yaml'})"  # the file itself


def test_hw_list_marks_a_users_own_entries(isolated_user_hwdb, invoke):
    _user_entry(isolated_user_hwdb, "my-gpu")
    _user_entry(isolated_user_hwdb, "v100-sxm2-16gb")
    database.clear_cache()
    lines = invoke("hw", "list").stdout.splitlines()
    assert any(line.startswith("my-gpu+ ") for line in lines)
    assert any(line.startswith("v100-sxm2-16gb* ") for line in lines)
    assert any(line.startswith("a100-sxm4-80gb ") for line in lines)  # bundled: unmarked
    assert "+ a user entry (your own file: a probe's --save, or one you wrote)" in lines


def test_user_entry_overrides_a_bundled_one(isolated_user_hwdb):
    _user_entry(isolated_user_hwdb, "v100-sxm2-16gb", bandwidth_gbs=800.0)
    database.clear_cache()
    assert load_hardware("v100-sxm2-16gb").bandwidth_gbs == 800.0
    assert load_hardware("v100").bandwidth_gbs == 800.0  # alias of the bundled entry still works


@pytest.mark.parametrize("change, message", [
    ({"bandwidth_gbs": -3}, "bandwidth_gbs: expected a positive number, got -3"),
    ({"peak_tflops": {"fp17": 3}}, "peak_tflops.fp17: unknown field"),
    ({"kind": "tpu"}, "kind: expected one of gpu, cpu, got 'tpu'"),
    ({"sources": []}, "sources: expected at least one source"),
    ({"sources": [{"title": "x", "url": "ftp://x", "covers": []}]},
     "sources[0].url: expected an http(s) URL"),
    ({"sources": [{"title": "x", "url": "https://x", "covers": ["gpu"]}]},
     "peak_tflops: no entry in 'sources' covers this figure"),
    ({"alignment": {"fp16": {"multiple": 8, "preferred": 60}}},
     "alignment.fp16.preferred: expected a multiple of 8, got 60"),
    ({"gpu": {"boost_clock_ghz": 1.5}}, "gpu.sms: missing required field"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "tiles": [[128]]}},
     "gpu.tiles[0]: expected [rows, columns] of positive integers, got [128]"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "sustained_clock_ghz": 0}},
     "gpu.sustained_clock_ghz: expected a positive number, got 0"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "sustained_clock": 1.2}},
     "gpu.sustained_clock: unknown field"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "vector_clock_ghz": -1}},
     "gpu.vector_clock_ghz: expected a positive number, got -1"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "vector_clock_ghz": 1.2}},
     "gpu.vector_clock_ghz: 1.2 is below boost_clock_ghz (1.5): it is the higher clock the FP32 "
     "and FP64 figures assume"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "vector_clock_ghz": 1.5e3}},
     "gpu.vector_clock_ghz"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "resident_threads": 1.5}},
     "gpu.resident_threads: expected a positive integer, got 1.5"),
    ({"gpu": {"sms": 80, "boost_clock_ghz": 1.5, "pcie_p2p": "no"}},
     "gpu.pcie_p2p: expected true or false, got 'no'"),
    ({**AS_CPU, "cpu": dict(CPU, clocks={"avx512": {"turbo": {}}})},
     "cpu.clocks.avx512.turbo: unknown field"),
    ({**AS_CPU, "cpu": dict(CPU, clocks={"avx512": {"base": {"ghz": 2, "tag": "K", "source": "x"}}})},
     "cpu.clocks.avx512.base.tag: expected one of R, 3P, D, unconfirmed, got 'K'"),
    ({**AS_CPU, "cpu": dict(CPU, peak_clock={"vector": "avx2.base"})},
     "cpu.peak_clock.vector: expected isa.kind naming a figure of cpu.clocks (avx512.base), "
     "got 'avx2.base'"),
    ({**AS_CPU, "cpu": dict(CPU, clock_ghz=2.0)},
     "cpu.clock_ghz: give either clock_ghz or clocks and peak_clock, not both"),
    ({**AS_CPU, "cpu": dict(CPU, amx_ops_per_cycle={"bf16": 1024})}, "cpu.peak_clock.amx: missing"),
])
def test_broken_user_entry_gives_one_line_naming_file_and_field(isolated_user_hwdb, change,
                                                                message):
    path = _user_entry(isolated_user_hwdb, "broken", **change)
    database.clear_cache()
    with pytest.warns(database.HwdbWarning), pytest.raises(InputError) as info:
        load_hardware("broken")  # skipped when listing; an error once it is the one asked for
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_user_entry_name_must_match_its_file(isolated_user_hwdb):
    path = _user_entry(isolated_user_hwdb, "one")
    path.rename(isolated_user_hwdb / "two.yaml")
    database.clear_cache()
    with pytest.warns(database.HwdbWarning, match="name: must equal the file name stem 'two'"):
        names = [spec.name for spec in list_hardware()]
    assert "one" not in names and "two" not in names and "a100-sxm4-80gb" in names
    with pytest.raises(InputError, match="name: must equal the file name stem 'two'"):
        load_hardware("two")


def test_hw_show_cli_lists_sources_and_ridge(invoke):
    result = invoke("hw", "show", "a100")
    assert result.exit_code == 0
    assert "ridge FLOP/B" in result.stdout and "153.0" in result.stdout
    assert "https://" in result.stdout and "from: bundled" in result.stdout


@pytest.mark.parametrize("name, lines", [
    ("8180", ["fp64, fp32 (vector): 2.3 GHz = avx512 all_core_turbo [3P]",
              "clock non_avx base: 2.5 GHz [R]"]),
    ("8480+", ["fp64, fp32 (vector): 2 GHz = avx512 base, upper bound [R]",
               "bf16, int8 (amx): 2 GHz = amx base, upper bound [R]",
               "vector_tflops bf16, int8 (vector): 2 GHz = avx512 base, upper bound [R]"]),
    ("7763", ["fp64, fp32 (vector): 2.45 GHz = avx2 base, lower bound [R]"]),
])
def test_hw_show_says_which_clock_each_peak_assumes(invoke, name, lines):
    out = invoke("hw", "show", name).stdout
    for line in lines:
        assert line in out
    assert "\ncpu: {" not in out  # the clocks are shown once, readably


def test_hw_list_json_contract(invoke):
    import json

    data = json.loads(invoke("hw", "list", "--format", "json", "--kind", "gpu").stdout)
    assert {d["kind"] for d in data} == {"gpu"}
    for entry in data:
        assert {"name", "kind", "peak_tflops", "bandwidth_gbs"} <= set(entry)


def test_hw_show_unknown_exits_2(invoke):
    result = invoke("hw", "show", "a100-sxm4-8gb")
    assert result.exit_code == 2
    assert "did you mean a100-sxm4-80gb" in result.stderr


def test_a_product_names_its_vendor_once():
    # a probed entry's model is the name the chip gives itself, the vendor's included: its
    # header read "AMD AMD EPYC 9R45"
    import dataclasses

    from roofline.hardware.catalog import load_hardware

    v100 = load_hardware("v100-sxm2-16gb")
    assert v100.product == "NVIDIA Tesla V100 SXM2 16GB"
    probed = dataclasses.replace(v100, vendor="AMD", model="AMD EPYC 9R45")
    assert probed.product == "AMD EPYC 9R45"


def test_hw_show_summarizes_a_calibration_and_says_the_llc_is_mib(isolated_user_hwdb, invoke):
    """A probe's calibration block printed as one flattened line of a few hundred characters;
    llc_mb (MiB, as the schema says) read beside analyze's 33.6 MB as a mismatch."""
    import copy

    from test_cpu_ops import ENTRY

    data = copy.deepcopy(ENTRY)
    (isolated_user_hwdb / "box.yaml").write_text(yaml.safe_dump(data))
    database.clear_cache()
    out = invoke("hw", "show", "box").stdout
    assert "llc_mb: 32 (MiB)" in out.splitlines()
    (line,) = [text for text in out.splitlines() if text.startswith("calibration:")]
    # a block without its library is numpy's BLAS by definition (Calibration.through)
    assert line == ("calibration: version 4, through numpy's BLAS: GEMMs in fp32, op costs (the "
                    "whole block: --format json, or the entry's file)")


def test_the_schema_states_the_name_characters_the_loader_takes(tmp_path):
    from roofline.hardware.spec import NAME_CHARS

    # docs/hwdb-schema.md's rule is the loader's: lowercase letters, digits and . _ + -
    doc = (Path(__file__).parent.parent / "docs" / "hwdb-schema.md").read_text()
    rule = re.search(r"name: a100-sxm4-80gb +# required; equals the file stem; lowercase "
                     r"\[a-z0-9(.*?)\]", doc)
    assert rule is not None
    assert NAME_CHARS == set("abcdefghijklmnopqrstuvwxyz0123456789") | set(rule.group(1))
    assert set(rule.group(1)) == set("._+-")
    # so an entry named with _ and + loads, and one with a capital letter is refused
    text = (HWDB / "gpu" / "a100-sxm4-80gb.yaml").read_text()
    good = tmp_path / "my_gpu+1.yaml"
    good.write_text(text.replace("name: a100-sxm4-80gb", "name: my_gpu+1")
                    .replace("aliases: [a100]", "aliases: []"))
    assert load_hardware(str(good)).name == "my_gpu+1"
    bad = tmp_path / "My-GPU.yaml"
    bad.write_text(text.replace("name: a100-sxm4-80gb", "name: My-GPU")
                   .replace("aliases: [a100]", "aliases: []"))
    with pytest.raises(InputError, match=r"names use lowercase letters, digits and \. - _ \+ "
                                         r"only, got 'My-GPU'"):
        load_hardware(str(bad))
