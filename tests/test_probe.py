"""Probe orchestration on the tiny preset: the JSON contract, the hardware entry, the atomic
save, --hw local and the CLI. Figures are whatever the tiny kernels give; none is asserted."""

from __future__ import annotations

import json
import os
import sys

import pytest
from _probe_fakes import CPUINFO

from roofline import probe
from roofline.api import analyze_model
from roofline.errors import ProbeSaveError
from roofline.files.atomic import write_atomic
from roofline.hardware.catalog import ENV_VAR, clear_cache, load_hardware
from roofline.hardware.spec import HardwareSpec
from roofline.probe import identify, runner

MODEL = "examples/mlp-1024-4096-1000.yaml"


def _without_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identify, "cpuinfo_dict", lambda: dict(CPUINFO))
    for name in ("pynvml", "torch", "cupy"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def no_gpu(monkeypatch):
    """No py-cpuinfo subprocess, no NVML, no torch/cupy: the plain CPU path, fast."""
    _without_gpu(monkeypatch)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    """One tiny probe (~0.2 s) shared by the tests that only read it, run as ``no_gpu`` runs it
    and with its own empty user directory (the per-test one is not set up yet)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _without_gpu(monkeypatch)
        monkeypatch.setenv(ENV_VAR, str(tmp_path_factory.mktemp("probe-user-hwdb")))
        clear_cache()
        try:
            return probe.run_probe(preset="tiny")
        finally:
            clear_cache()


def test_json_contract(result):
    data = json.loads(json.dumps(result.to_dict()))
    assert {"schema_version", "method_version", "cpu", "gpus", "measured", "theoretical",
            "metadata", "details", "not_measured", "assumptions"} <= set(data)
    assert {"brand", "cores", "isa", "flags"} <= set(data["cpu"])
    assert data["gpus"] == []
    measured = data["measured"]
    assert set(measured["gemm_gflops"]) == {"fp64", "fp32"}
    assert measured["bandwidth_gbs"]["dram"] > 0
    assert {"triad", "copy"} <= set(measured["bandwidth_gbs"])
    assert measured["small_gemm_overhead_s"] > 0
    assert set(data["theoretical"]["gemm_gflops"]) >= {"fp64", "fp32"}
    stats = data["details"]["gemm_fp32"]["sizes"]["16"]
    assert {"best", "median", "mad_s", "spread", "repeats"} <= set(stats)
    meta = data["metadata"]
    assert {"date", "platform", "numpy_version", "blas", "method_version"} <= set(meta)
    figures = {n["figure"] for n in data["not_measured"]}
    assert {"gemm_gflops.bf16", "gemm_gflops.fp16"} <= figures
    assert any(f.startswith("gpu") for f in figures)


def test_theoretical_is_never_below_measured_on_a_cpu_clocked_above_base(no_gpu, monkeypatch):
    # a fake CPU advertised at 1 MHz whose cores were measured at 2 MHz: both far below what
    # even the tiny GEMMs reach, so every measured rate is above the computed ceiling
    monkeypatch.setattr(identify, "cpuinfo_dict", lambda: CPUINFO | {"hz_advertised": [1e6, 0]})
    monkeypatch.setattr(runner, "_effective_clock", lambda cpu, say: 0.002)
    result = probe.run_probe(preset="tiny")
    theory = result.theoretical["gemm_gflops"]
    for dtype, rate in result.measured["gemm_gflops"].items():
        assert theory[dtype] >= rate * (1 - 1e-9), dtype
    assert any("clock is raised from 0.00" in a for a in result.to_dict()["assumptions"])
    assert result.details["effective_clock_ghz"] == 0.002
    from roofline.output.probe import probe_table

    assert "measured under load" in probe_table(result)


def test_progress_is_reported(no_gpu):
    messages = []
    probe.run_probe(preset="tiny", progress=messages.append)
    assert messages[0].startswith("roofline probe (tiny)")
    assert any("fp32 GEMM" in m for m in messages)


class _StartLoad:
    """Other programs' load as a LoadMeter reads it: ``first`` CPUs through the first lap
    (the identification), none after it."""

    def __init__(self, first):
        self.first, self.laps = first, []

    def lap(self):
        load, self.first = self.first, 0.0
        self.laps.append(load)
        return load

    def total(self):
        return 0.0


@pytest.mark.parametrize("load, said", [(1.24, True), (0.15, False), (None, False)])
def test_a_busy_machine_is_said_at_the_start(no_gpu, monkeypatch, load, said):
    # a user's quick probe heard of 1.24 CPUs of other load only in its result, 26 s later
    monkeypatch.setattr(runner, "LoadMeter", lambda: _StartLoad(load))
    messages = []
    probe.run_probe(preset="tiny", progress=messages.append)
    line = ("  other programs are keeping about 1.24 CPUs busy: the figures will be a shared "
            "machine's, the calibration may run extra rounds, and a probe through which they "
            "keep over 0.25 on average is not saved unless forced; an idle machine gives "
            "steadier figures")
    assert (line in messages) == said
    if said:  # before any kernel is timed
        first_gemm = next(i for i, m in enumerate(messages) if "GEMM through" in m)
        assert messages.index(line) < first_gemm


def test_hardware_entry_validates_and_analyzes(result):
    entry = result.to_hardware_dict("mybox")
    assert entry["origin"] == "measured" and entry["kind"] == "cpu"
    assert entry["peak_tflops"]["fp32"] == pytest.approx(
        result.measured["gemm_gflops"]["fp32"] / 1000, rel=1e-3)
    assert entry["theoretical"]["peak_tflops"]["fp32"] > 0
    assert {"date", "machine", "method_version", "command"} <= set(entry["measured"])
    assert set(entry["sources"][0]["covers"]) == {"peak_tflops", "bandwidth_gbs", "cpu",
                                                  "llc_mb"} & set(entry)
    spec = HardwareSpec.from_dict(entry, "probe")
    report = analyze_model(MODEL, spec, dtype="fp32")
    assert report.hardware.origin == "measured"


def test_save_then_use_by_name(result, isolated_user_hwdb, stable_probe):
    path = probe.save_entry(result, "mybox")
    assert path == isolated_user_hwdb / "mybox.yaml"
    assert load_hardware("mybox").origin == "measured"  # the cache was cleared by the save
    with pytest.raises(ProbeSaveError, match="already exists"):
        probe.save_entry(result, "mybox")
    probe.save_entry(result, "mybox", force=True)
    assert sorted(p.name for p in isolated_user_hwdb.iterdir()) == ["mybox.yaml"]


@pytest.mark.parametrize("name", ["My Box", "../evil", "", ".hidden"])
def test_bad_names_are_refused(result, name):
    with pytest.raises(ProbeSaveError):
        probe.save_entry(result, name)


def test_interrupted_write_leaves_nothing(tmp_path, monkeypatch):
    def boom(fd):
        raise KeyboardInterrupt  # Ctrl-C in the middle of writing

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "d" / "x.yaml", "name: x\n", force=False)
    assert list((tmp_path / "d").iterdir()) == []


def test_interrupted_overwrite_keeps_the_old_file(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "x.yaml"
    target.write_text("old\n")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        write_atomic(target, "new\n", force=True)
    assert target.read_text() == "old\n"
    assert list(target.parent.iterdir()) == [target]


def test_nothing_measured_cannot_be_saved(result):
    empty = result.__class__(**{**result.__dict__, "measured": {"gemm_gflops": {},
                                                                 "bandwidth_gbs": {}}})
    with pytest.raises(ProbeSaveError, match="nothing to save"):
        empty.to_hardware_dict("x")


def test_local_hardware_probes_once_then_reuses(no_gpu, monkeypatch, isolated_user_hwdb,
                                                stable_probe):
    real = probe.run_probe
    monkeypatch.setattr(runner, "run_probe", lambda quick, progress, library="numpy": real(
        preset="tiny", library=library))
    messages = []
    spec = probe.local_hardware(messages.append)
    assert spec.name == "local" and spec.origin == "measured"
    assert (isolated_user_hwdb / "local.yaml").exists()
    assert any("quick probe" in m for m in messages)

    def fail(**kwargs):
        raise AssertionError("a saved local entry must be reused")

    monkeypatch.setattr(runner, "run_probe", fail)
    clear_cache()
    assert probe.local_hardware().name == "local"
    assert probe.resolve_hardware("v100") == "v100"


def test_cli_probe_json_and_save(no_gpu, invoke, isolated_user_hwdb, stable_probe):
    res = invoke("probe", "--preset", "tiny", "--format", "json", "--save", "box")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["measured"]["gemm_gflops"]["fp32"] > 0
    assert "saved 'box'" in res.stderr and "fp32 GEMM" in res.stderr
    assert (isolated_user_hwdb / "box.yaml").exists()
    again = invoke("probe", "--preset", "tiny", "--save", "box")
    assert again.exit_code == 2 and "already exists" in again.stderr
    assert "fp32 GEMM" not in again.stderr  # refused before probing


def test_cli_probe_table(no_gpu, invoke):
    res = invoke("probe", "--preset", "tiny")
    assert res.exit_code == 0
    assert "GEMM fp32" in res.stdout and "not measured" in res.stdout


def test_cli_analyze_hw_local(no_gpu, invoke, monkeypatch, stable_probe):
    real = probe.run_probe
    monkeypatch.setattr(runner, "run_probe", lambda quick, progress, library="numpy": real(
        preset="tiny", library=library))
    res = invoke("analyze", MODEL, "--hw", "local", "--dtype", "fp32", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["hardware"] == "local"
    assert "saved as 'local'" in res.stderr


def _no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    def probed(**kwargs):
        raise AssertionError("the dtype is refused before any probe")

    monkeypatch.setattr(runner, "run_probe", probed)


@pytest.mark.parametrize("args, words", [
    # the fake CPU (tests/_probe_fakes.CPUINFO) has AVX512_BF16 and AMX_BF16, no fp16 units
    (("--dtype", "fp16"), "no fp16 peak: this CPU (Intel(R) Xeon(R) Processor @ 2.10GHz) has "
                          "no native fp16 units (none of AMX_FP16, AVX512_FP16, ASIMDHP)"),
    # no probe times int8 or tf32 GEMMs, on a CPU or a GPU
    (("--dtype", "int8"), "no int8 peak: a probe times GEMMs in fp64 and fp32"),
    (("--dtype", "tf32"), "never tf32; choose one of those with --dtype"),
    # its bf16 units need torch, which no_gpu hides; the setting named is the one that chose it
    (("--dtype", "fp32", "--activations", "bf16"),
     "no bf16 peak: bf16 GEMMs on a CPU run through torch, which is not installed, so its "
     "probe would time fp64 and fp32 GEMMs only; choose one of them with --activations"),
])
def test_hw_local_refuses_a_dtype_before_probing(no_gpu, invoke, monkeypatch, args, words):
    _no_probe(monkeypatch)
    for command in (("analyze", MODEL), ("compare", MODEL, "--hw", "a100"),
                    ("sweep", MODEL, "--batch", "1,2")):
        res = invoke(*command, "--hw", "local", *args)
        assert res.exit_code == 2, res.output
        assert words in res.stderr and "(nothing was probed)" in res.stderr, res.stderr
        assert "Traceback" not in res.output


def test_hw_local_checks_gemm_and_plan_dtypes_too(no_gpu, invoke, monkeypatch):
    _no_probe(monkeypatch)
    res = invoke("gemm", "64", "64", "64", "--hw", "local", "--dtype", "fp16")
    assert res.exit_code == 2 and "no fp16 peak" in res.stderr
    res = invoke("plan", "examples/hf/gpt2.json", "--hw", "local", "--gpus", "2",
                 "--dtype", "fp8")
    assert res.exit_code == 2 and "no fp8 peak" in res.stderr


def test_hw_local_refuses_a_step_it_cannot_analyze_before_probing(no_gpu, invoke, monkeypatch):
    """A config.json gives no batch, seq or dtype: `--hw local` refused them only after its
    quick probe's 10-30 s (found on the CPU tour: GPT-2's config without --dtype probed for
    28 s, then failed). The same one line as the analysis gives, nothing probed."""
    _no_probe(monkeypatch)
    config = "examples/hf/gpt2.json"
    dtype = (f"Error: {config}: dtype: missing required field (the config.json gives no "
             f"torch_dtype read here: bfloat16, float16, float32 or float64; give --dtype)")
    shape = ("--batch", "1", "--seq", "128")
    for command in (("analyze", config, *shape), ("compare", config, "--hw", "a100", *shape),
                    ("sweep", config, "--batch", "1,2", "--seq", "128")):
        res = invoke(*command, "--hw", "local")
        assert res.exit_code == 2, res.output
        assert res.stderr.strip() == dtype, (command, res.stderr)
    for command in (("analyze", config), ("compare", config, "--hw", "a100")):
        res = invoke(*command, "--hw", "local", "--dtype", "fp32")
        assert res.exit_code == 2, res.output
        assert res.stderr.strip() == (f"Error: {config}: batch, seq: missing required fields "
                                      f"(give them in the model or --batch and --seq)")


def test_hw_local_leaves_a_gpu_to_its_probe(fake_gpu, invoke, monkeypatch):
    """With a GPU listed by NVML the probe would time bf16 on it: no refusal ahead of it."""
    def probed(**kwargs):
        raise ProbeSaveError("probed")

    monkeypatch.setattr(runner, "run_probe", probed)
    res = invoke("analyze", MODEL, "--hw", "local", "--dtype", "bf16")
    assert res.exit_code == 2 and "probed" in res.stderr, res.output


def test_a_kernel_that_fails_its_check_ends_in_one_line(no_gpu, invoke, monkeypatch):
    from roofline.errors import KernelCheckError
    from roofline.kernels import cpu as cpu_kernels

    def wrong(n, dtype):
        raise KernelCheckError(f"{dtype} GEMM n={n}: result differs from the reference")

    monkeypatch.setattr(cpu_kernels, "gemm_kernel", wrong)
    res = invoke("probe", "--preset", "tiny")
    assert res.exit_code == 2 and "Traceback" not in res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error")]
    assert errors == ["Error: fp32 GEMM n=16: result differs from the reference"]


def test_a_variable_that_pins_the_blas_kernels_is_named():
    from roofline.output.probe_notes import note_text
    from roofline.probe.runner import blas_env_warnings

    (warning,) = blas_env_warnings({"OPENBLAS_CORETYPE": "Haswell", "PATH": "/bin"})
    assert note_text(warning).startswith("OPENBLAS_CORETYPE=Haswell is set: OpenBLAS runs its kernels")
    assert blas_env_warnings({"OPENBLAS_NUM_THREADS": "2"}) == []


def test_cli_probe_html(no_gpu, invoke):
    res = invoke("probe", "--preset", "tiny", "--format", "html")
    assert res.exit_code == 0
    text = res.stdout
    assert text.startswith("<!DOCTYPE html>") and "<h1>roofline probe: " in text
    assert "GEMM fp32" in text and "not measured" in text  # the probe's table, in the page
    assert "<code>roofline probe --preset tiny --format html</code>" in text


NO_LOWP_FLAGS = CPUINFO | {"flags": ["avx", "avx2", "fma", "sse2"]}


def test_a_dtype_without_native_units_is_not_timed(no_gpu, monkeypatch):
    # issue 25, class 11: torch timed bf16 on an AVX2 CPU at 0.6 GFLOP/s for 21 minutes
    from roofline.kernels import gpu as gpu_kernels
    from roofline.output.probe_notes import note_text

    monkeypatch.setattr(identify, "cpuinfo_dict", lambda: dict(NO_LOWP_FLAGS))
    monkeypatch.setattr(gpu_kernels, "cpu_lowp_backend",
                        lambda: pytest.fail("no native unit: torch is not asked"))
    result = probe.run_probe(preset="tiny")
    assert not {"bf16", "fp16"} & set(result.measured["gemm_gflops"])
    reasons = {s.figure: s.reason for s in result.not_measured}
    assert note_text(reasons["gemm_gflops.bf16"]) == (
        "this CPU has no native bf16 arithmetic (none of AMX_BF16, AVX512_BF16, BF16 among "
        "its flags): torch would convert every element through fp32, and its rate would "
        "describe the conversion, not the CPU's units; not timed")
    assert "AMX_FP16, AVX512_FP16, ASIMDHP" in note_text(reasons["gemm_gflops.fp16"])
    data = result.to_dict()
    assert {"figure": "gemm_gflops.bf16", "reason": note_text(reasons["gemm_gflops.bf16"])} \
        in data["not_measured"]


def test_a_native_dtype_is_timed_through_torch(no_gpu, monkeypatch):
    from _probe_fakes import fake_torch

    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=False))
    result = probe.run_probe(preset="tiny")  # CPUINFO: AVX512_BF16 and AMX-BF16, no fp16
    assert result.measured["gemm_gflops"]["bf16"] > 0
    assert "fp16" not in result.measured["gemm_gflops"]


def test_native_flags():
    from roofline.probe.ceilings import native_flag

    assert native_flag("bf16", ("avx2", "avx512_bf16", "amx_bf16")) == "amx_bf16"
    assert native_flag("bf16", ("avx2", "avx512f")) is None
    assert native_flag("fp16", ("avx512_fp16",)) == "avx512_fp16"
    assert native_flag("fp16", ("asimd", "asimdhp")) == "asimdhp"  # Armv8.2-A
    assert native_flag("bf16", ("asimd", "bf16")) == "bf16"  # Armv8.6-A


class _Clock:
    now = 0.0

    def __call__(self):
        return self.now


def test_a_size_whose_one_call_would_pass_the_budget_is_not_run():
    import dataclasses

    from roofline.kernels.cpu import Kernel
    from roofline.output.probe_notes import note_text
    from roofline.probe.plan import PRESETS

    clock = _Clock()
    made = []

    def make(n):  # one call takes n^3 ns: n = 100 -> 1 ms
        made.append(n)

        def run(loops):
            clock.now += loops * n**3 * 1e-9

        return Kernel(f"GEMM n={n}", run, 2.0 * n**3, "FLOP")

    plan = dataclasses.replace(PRESETS["tiny"], kernel_budget_s=0.5)
    session = runner.Session(plan, lambda m: None, clock)
    # n = 100 timed at 1 ms; n = 1000 would take 1 ms x (1000 / 100)^3 = 1 s > 0.5 s
    best = session.best_over_sizes("gemm_x", make, (100, 1000), "GFLOP/s")
    assert made == [100]
    assert best == pytest.approx(2e6 / 1e-3 / 1e9)  # 2 GFLOP/s
    assert session.details["gemm_x"]["best_n"] == 100
    (note,) = [n for n in session.warnings if n.code == "size_over_budget"]
    assert note_text(note) == ("gemm_x: n=1000 not run: one call would take about 1 s (the "
                               "smaller size's time x the n^3 work), over the 0.5 s budget of "
                               "one kernel")


def test_a_kernel_cut_by_its_budget_says_so():
    import dataclasses

    from roofline.kernels.cpu import Kernel
    from roofline.output.probe_notes import note_text
    from roofline.probe.plan import PRESETS

    clock = _Clock()

    def run(loops):  # 0.3 s a call
        clock.now += loops * 0.3

    plan = dataclasses.replace(PRESETS["tiny"], kernel_budget_s=0.5, repeats=5, warmups=1)
    session = runner.Session(plan, lambda m: None, clock)
    stats = session.time(Kernel("slow GEMM", run, 1.0, "FLOP"), 1.0)
    # calibration 0.3 s; warm-up 0.3 -> 0.6 s would pass 0.5 s: one value, no warm-up
    assert stats["repeats"] == 1 and stats["warmups"] == 0
    (note,) = [n for n in session.warnings if n.code == "time_budget"]
    assert note_text(note) == ("slow GEMM: 1 of 5 values timed, within the 0.5 s budget of one "
                               "kernel; its figure is less steady than the others")


def test_a_probe_says_which_check_a_save_would_fail(no_gpu, monkeypatch):
    monkeypatch.setattr(runner, "unstable_reasons",
                        lambda result: ["fp32 GEMM ran slower than fp64 (1.0 < 2.0 GFLOP/s)"])
    warnings = probe.run_probe(preset="tiny").to_dict()["warnings"]
    assert warnings[-1] == ("fp32 GEMM ran slower than fp64 (1.0 < 2.0 GFLOP/s): `roofline "
                            "probe --save` keeps this result only with --force (the probe's "
                            "own checks)")


def test_the_share_warning_reads_the_figures_the_result_keeps(no_gpu, monkeypatch):
    # the calibration's rounds raise a peak to their best after the first pass timed it: the
    # warning was once computed before them, so it could say 27% of the peak while the table
    # beside it said 73%
    seen = []
    calibrate = runner.calibrate

    def raising(session, *args, **kwargs):
        calibrate(session, *args, **kwargs)
        session.measured["gemm_gflops"]["fp32"] = 1e6  # the rounds' best

    monkeypatch.setattr(runner, "calibrate", raising)
    monkeypatch.setattr(runner, "share_gap", lambda gflops, *a: seen.append(dict(gflops)) or [])
    result = probe.run_probe(preset="tiny")
    assert seen == [result.measured["gemm_gflops"]] and seen[0]["fp32"] == 1e6


def test_a_dram_figure_the_rounds_raised_says_what_it_is(no_gpu, monkeypatch):
    # a quick probe here showed dram 16.79 GB/s beside bandwidth_stats.dram.best and
    # details.dram_read.best of 16.25, and nothing said why: the rounds' read stream (made
    # here twice its own measurement's best) raised it. The result now says so, by figure
    from roofline.probe import calibrate_rounds

    raise_figures = calibrate_rounds.raise_figures

    def doubled(s, kernels, best):
        raise_figures(s, kernels, best)
        own = s.details["dram_read"]["best"]
        s.measured["bandwidth_gbs"]["dram"] = max(s.measured["bandwidth_gbs"]["dram"], 2 * own)

    monkeypatch.setattr(calibrate_rounds, "raise_figures", doubled)
    data = probe.run_probe(preset="tiny").to_dict()
    own = data["measured"]["bandwidth_stats"]["dram"]["best"]
    assert own == data["details"]["dram_read"]["best"]
    assert data["measured"]["bandwidth_gbs"]["dram"] >= 2 * own
    (said,) = [a for a in data["assumptions"] if a.startswith("bandwidth_gbs.dram ")]
    assert f"above the {own:.4g} of its own measurement (bandwidth_stats.dram)" in said
    assert "details.calibration_rounds" in data["details"]["stream_note"]


def test_a_small_spread_of_three_values_says_its_count_and_the_worst_ratio_warns():
    # the tour's quick-probe copy: spread 0.044 beside a median 42% of the best. Spread is
    # MAD / median of the timed values; of three values it is the median's distance to its
    # nearer neighbour. Times 1.0, 2.4, 2.5 s for 1 GB: best 1 GB/s, median 1 / 2.4 = 0.417
    # (42% of the best); deviations from 2.4: 1.4, 0, 0.1, MAD 0.1, spread 0.1 / 2.4 = 4.2%
    from roofline.kernels.timing import BenchResult
    from roofline.output.probe_notes import note_text

    bench = BenchResult((1.0, 2.4, 2.5), (), 1)
    stats = bench.to_dict(1e9, "GB/s", 1e9)
    assert stats["median"] / stats["best"] == pytest.approx(1 / 2.4)
    assert stats["spread"] == pytest.approx(0.1 / 2.4)
    assert runner._spread_words(stats) == "spread (MAD/median of 3 values) 4.2%"
    # the spread alone would pass for steady; the worst value at 2.5x the best (over 1.5x)
    # is what calls it unstable, and the warning says that, not the spread
    note = runner.instability_note("copy", bench)
    assert note is not None and note_text(note).startswith(
        "copy may be unstable: its worst value took 2.5x its best (best 1 s, median 2.4 s, "
        "worst 2.5 s per call over 3 values; spread (MAD/median) 4%)")
