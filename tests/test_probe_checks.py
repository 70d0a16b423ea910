"""The probe's own checks (issue 25): a result they call unstable (fp32 slower than fp64, an
efficiency above 1.05, a spread above 25 %) is not saved without --force, and the refusal names
the check in one line. Results are built by hand; only the CLI test runs a (tiny) probe."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from _probe_fakes import CPUINFO

from roofline import probe
from roofline.errors import ProbeSaveError
from roofline.probe import checks, identify, runner
from roofline.probe.checks import EFFICIENCY_LIMIT, SPREAD_LIMIT, unstable_reasons
from roofline.probe.result import ProbeResult


def _gemm_details(spread: float) -> dict:
    return {"sizes": {"1024": {"spread": spread, "best": 1.0}}, "best_n": 1024}


def steady(**changes) -> ProbeResult:
    """A CPU result that passes every check: fp32 100 GFLOP/s = half its 200 ceiling, fp64 50
    of 100, DRAM 10 of 20 GB/s, calibration efficiencies at most 0.9, spreads 1-2 %."""
    measured = {"gemm_gflops": {"fp32": 100.0, "fp64": 50.0},
                "bandwidth_gbs": {"dram": 10.0, "triad": 9.0, "copy": 9.5},
                "small_gemm_overhead_s": 1e-6,
                "calibration": {"version": 2, "call_overhead_s": 1e-6, "gemm_efficiency": {
                    "fp32": {"square": {"32": 0.2, "512": 0.9}, "thin": {"1": 0.05},
                             "thin_nk": 1024, "thin_dram": {"1": 0.01}, "thin_dram_nk": 5120,
                             "peak_n": 1024, "c_write": {"passes": 2.5, "m": 6144, "n": 4096,
                                                         "k": 16, "time_s": 0.09}}}}}
    theoretical = {"gemm_gflops": {"fp32": 200.0, "fp64": 100.0},
                   "bandwidth_gbs": {"dram": 20.0}}
    details = {"gemm_fp32": _gemm_details(0.01), "gemm_fp64": _gemm_details(0.02),
               "dram_read": {"spread": 0.02}}
    cpu = identify.identify_cpu(dict(CPUINFO))
    result = ProbeResult("quick", cpu, [], [], measured, theoretical, details, [], [], [],
                         {"date": "2026-11-25T08:00:00+00:00", "hostname": "box",
                          "platform": "Linux", "method_version": 4})
    return dataclasses.replace(result, **changes)


def test_the_limits_are_the_stated_ones():
    assert (EFFICIENCY_LIMIT, SPREAD_LIMIT, checks.SHARED_LIMIT) == (1.05, 0.25, 0.25)


def test_a_steady_result_passes_and_saves(isolated_user_hwdb):
    assert unstable_reasons(steady()) == []
    assert probe.save_entry(steady(), "box") == isolated_user_hwdb / "box.yaml"


def test_fp32_slower_than_fp64():
    result = steady()
    result.measured["gemm_gflops"].update(fp32=40.0)  # below fp64's 50
    assert unstable_reasons(result) == [
        "fp32 GEMM ran slower than fp64 (40.0 < 50.0 GFLOP/s)"]


def test_an_efficiency_above_the_limit():
    result = steady()
    result.measured["bandwidth_gbs"]["dram"] = 21.2  # 21.2 / 20 = 1.06 > 1.05
    assert unstable_reasons(result) == [
        "the DRAM read stream 21.2 GB/s is 1.06x its ceiling 20.0 (more than 1.05x)"]
    result.measured["bandwidth_gbs"]["dram"] = 21.0  # exactly 1.05: within the allowance
    assert unstable_reasons(result) == []
    result.measured["gemm_gflops"]["fp32"] = 250.0  # 250 / 200 = 1.25
    assert unstable_reasons(result) == [
        "measured fp32 GEMM 250.0 GFLOP/s is 1.25x its ceiling 200.0 (more than 1.05x)",
        # the n = 512 calibration GEMM at 0.9 of that peak: 0.9 x 250 / 200 = 1.125
        "calibration fp32 square GEMM (n = 512) ran at 1.12x the theoretical 200.0 GFLOP/s "
        "(more than 1.05x)"]


def test_a_calibration_gemm_above_the_ceiling():
    # efficiencies are shares of the measured fp32 peak, 100 of a 200 GFLOP/s ceiling: 13.5 x
    # 100 / 200 = 6.75x the ceiling fails; 2.1 x 100 / 200 = 1.05 does not (it outran the
    # measured peak, which a small GEMM's share after the call overhead can, but not the
    # ceiling)
    result = steady()
    result.measured["calibration"]["gemm_efficiency"]["fp32"]["square"]["32"] = 13.5
    result.measured["calibration"]["gemm_efficiency"]["fp32"]["thin"]["1"] = 2.1
    assert unstable_reasons(result) == [
        "calibration fp32 square GEMM (n = 32) ran at 6.75x the theoretical 200.0 GFLOP/s "
        "(more than 1.05x)"]
    result.measured["calibration"]["gemm_efficiency"]["fp32"]["thin"]["1"] = 2.2  # 1.1x
    assert len(unstable_reasons(result)) == 2
    # timed below the per-call overhead at probe method 4's floor of 1e-12 s: huge
    result.measured["calibration"]["gemm_efficiency"]["fp32"]["thin"]["1"] = 671_386.7
    assert unstable_reasons(result)[1] == (
        "calibration fp32 thin GEMM (M = 1) ran at 335,693x the theoretical 200.0 GFLOP/s "
        "(more than 1.05x)")  # 671,386.7 x 100 / 200
    result.measured["calibration"]["gemm_efficiency"]["fp32"]["thin"]["1"] = 2.2
    # no ceiling known (no clock): against the measured peak itself
    del result.theoretical["gemm_gflops"]["fp32"]
    assert unstable_reasons(result) == [
        "calibration fp32 square GEMM (n = 32) ran at 13.50x the measured fp32 peak (more "
        "than 1.05x)",
        "calibration fp32 thin GEMM (M = 1) ran at 2.20x the measured fp32 peak (more than "
        "1.05x)"]


def test_a_spread_above_the_limit():
    result = steady()
    result.details["gemm_fp64"] = _gemm_details(0.30)
    result.details["dram_read"]["spread"] = 0.26
    assert unstable_reasons(result) == [
        "fp64 GEMM n=1024 spread 30% (MAD / median, more than 25%)",
        "DRAM read stream spread 26% (MAD / median, more than 25%)"]
    result.details["gemm_fp64"] = _gemm_details(0.25)  # at the limit: passes
    result.details["dram_read"]["spread"] = 0.25
    assert unstable_reasons(result) == []


def test_a_probe_run_on_a_shared_machine():
    # other programs' load through the probe, from /proc/stat: above 0.25 CPUs, refused
    result = steady()
    result.details["other_load_cpus"] = 0.43
    assert unstable_reasons(result) == [
        "other programs kept 0.43 CPUs busy on average while it ran (more than 0.25)"]
    for load in (0.25, 0.02, None):  # at the limit, an idle machine, not measurable: passes
        result.details["other_load_cpus"] = load
        assert unstable_reasons(result) == []


def test_a_gpu_result_is_checked_too():
    result = steady()
    result.measured["gpu"] = {"gemm_gflops": {"fp32": 10_000.0, "fp64": 19_000.0},
                              "bandwidth_gbs": {"device": 1500.0}}
    result.theoretical["gpu"] = {"gemm_gflops": {"fp32": 19_500.0, "fp64": 9_700.0},
                                 "bandwidth_gbs": {"device": 2039.0}}
    # 19,000 / 9,700 = 1.96
    assert unstable_reasons(result) == [
        "GPU fp32 GEMM ran slower than fp64 (10,000.0 < 19,000.0 GFLOP/s)",
        "measured GPU fp64 GEMM 19,000.0 GFLOP/s is 1.96x its ceiling 9,700.0 (more than "
        "1.05x)"]


def test_fp32_below_fp64_on_fp64_tensor_cores_is_no_disturbance():
    # what `probe --save` met on a lent H100 SXM5 (2026-11-27): FP64 on its Tensor Cores at
    # 55.4 TFLOP/s, FP32 on its CUDA cores at 51.2, both ceilings 67 (hwdb entry)
    result = steady()
    result.measured["gpu"] = {"gemm_gflops": {"fp32": 51_197.7, "fp64": 55_402.1},
                              "bandwidth_gbs": {"device": 2962.7}}
    result.theoretical["gpu"] = {"gemm_gflops": {"fp32": 67_000.0, "fp64": 67_000.0},
                                 "bandwidth_gbs": {"device": 3352.3}}
    assert unstable_reasons(result) == []


def test_an_unstable_result_is_refused_unless_forced(isolated_user_hwdb):
    result = steady()
    result.measured["gemm_gflops"].update(fp32=40.0)
    with pytest.raises(ProbeSaveError) as caught:
        probe.save_entry(result, "box")
    assert str(caught.value) == (
        "not saving 'box': the probe's own check failed: fp32 GEMM ran slower than fp64 (40.0 "
        "< 50.0 GFLOP/s); rerun on an idle machine, or pass force=True to save it anyway")
    assert list(isolated_user_hwdb.iterdir()) == []
    probe.save_entry(result, "box", force=True)
    assert (isolated_user_hwdb / "box.yaml").exists()


def test_the_cli_refuses_in_one_line_and_force_saves(invoke, monkeypatch, isolated_user_hwdb):
    result = steady()
    result.details["dram_read"]["spread"] = 0.4
    result.measured["gemm_gflops"].update(fp32=40.0)
    monkeypatch.setattr(runner, "run_probe", lambda **kwargs: result)
    monkeypatch.setattr(probe, "run_probe", lambda **kwargs: result)
    res = invoke("probe", "--save", "box", "--format", "json")
    assert res.exit_code == 2
    assert json.loads(res.stdout)["measured"]["gemm_gflops"]["fp32"] == 40.0  # still shown
    assert res.stderr.splitlines() == [
        "Error: not saving 'box': the probe's own check failed: fp32 GEMM ran slower than fp64 "
        "(40.0 < 50.0 GFLOP/s) (and 1 more); rerun on an idle machine, or pass --force to "
        "save it anyway"]
    assert list(isolated_user_hwdb.iterdir()) == []
    res = invoke("probe", "--save", "box", "--force")
    assert res.exit_code == 0 and (isolated_user_hwdb / "box.yaml").exists()
    saved = (isolated_user_hwdb / "box.yaml").read_text()
    assert "command: roofline probe --quick --save box --force\n" in saved
    assert "  - check: fp32_below_fp64\n" in saved and "  - check: spread\n" in saved


def test_each_failed_check_has_its_name():
    result = steady()
    result.measured["gemm_gflops"].update(fp32=40.0)  # below fp64's 50
    result.measured["bandwidth_gbs"]["dram"] = 21.2  # 1.06x its 20 GB/s ceiling
    result.details["gemm_fp64"] = _gemm_details(0.30)
    result.details["other_load_cpus"] = 1.24
    result.measured["calibration"]["gemm_efficiency"]["fp32"]["square"]["32"] = 13.5
    # 13.5 x 40 / 200 = 2.7x the ceiling
    assert [check for check, _ in checks.failed_checks(result)] == [
        "fp32_below_fp64", "over_ceiling", "calibration_over_ceiling", "spread",
        "shared_machine"]
    assert {check for check, _ in checks.failed_checks(result)} <= set(checks.CHECKS)
    assert unstable_reasons(result) == [reason for _, reason in checks.failed_checks(result)]


def _forced_past_checks() -> ProbeResult:
    """A user's tour: fp32 below fp64 and 1.24 CPUs of other programs' load."""
    result = steady()
    result.measured["gemm_gflops"].update(fp32=40.0)
    result.details["other_load_cpus"] = 1.24
    return result


FORCED_REASONS = ["fp32 GEMM ran slower than fp64 (40.0 < 50.0 GFLOP/s)",
                  "other programs kept 1.24 CPUs busy on average while it ran (more than 0.25)"]


def test_a_save_forced_past_the_checks_records_them(isolated_user_hwdb):
    import yaml

    path = probe.save_entry(_forced_past_checks(), "mybox", force=True)
    data = yaml.safe_load(path.read_text())
    measured = data["measured"]
    # the command as given (the result is a quick probe's), --force and all
    assert measured["command"] == "roofline probe --quick --save mybox --force"
    assert data["sources"][0]["command"] == measured["command"]
    assert measured["forced_past"] == [
        {"check": "fp32_below_fp64", "reason": FORCED_REASONS[0]},
        {"check": "shared_machine", "reason": FORCED_REASONS[1]}]
    assert data["notes"].startswith(
        "Saved with --force past the probe's own checks (a disturbed run's figures): "
        f"{FORCED_REASONS[0]}; {FORCED_REASONS[1]}. Measured by `roofline probe`")
    from roofline.hardware.catalog import load_hardware

    assert load_hardware("mybox").forced_past == tuple(FORCED_REASONS)


def test_a_forced_save_that_passed_the_checks_records_none(isolated_user_hwdb):
    import yaml

    probe.save_entry(steady(), "mybox")
    path = probe.save_entry(steady(), "mybox", force=True)  # --force only replaced the file
    data = yaml.safe_load(path.read_text())
    assert data["measured"]["command"] == "roofline probe --quick --save mybox --force"
    assert "forced_past" not in data["measured"] and not data["notes"].startswith("Saved")
    path = probe.save_entry(steady(), "other")
    assert yaml.safe_load(path.read_text())["measured"]["command"] == (
        "roofline probe --quick --save other")


def test_analyze_on_a_forced_entry_says_so(invoke, isolated_user_hwdb):
    probe.save_entry(_forced_past_checks(), "mybox", force=True)
    sentence = (f"entry mybox was saved with --force past the probe's own checks: "
                f"{FORCED_REASONS[0]}; {FORCED_REASONS[1]}; its figures, and the predictions "
                f"from them, may be a disturbed run's: `roofline probe --save mybox --force` "
                f"on an idle machine replaces them")
    model = "examples/mlp-1024-4096-1000.yaml"
    res = invoke("analyze", model, "--hw", "mybox", "--dtype", "fp32", "--format", "json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["warnings"] == [sentence]
    res = invoke("analyze", model, "--hw", "mybox", "--dtype", "fp32")
    assert " ".join(res.stdout.split()).count(f"warning: {sentence}") == 1
    # and in the header, where the figures are named: 0.04 TFLOP/s fp32 (40 GFLOP/s), 10 GB/s
    assert res.stdout.splitlines()[2] == (
        "ridge 4.0 FLOP/B = dense peak 0.04 TFLOP/s / 10 GB/s (measured, saved past its "
        "probe's checks: see the warnings)")
    probe.save_entry(steady(), "quiet")  # no check failed: no such warning
    res = invoke("analyze", model, "--hw", "quiet", "--dtype", "fp32", "--format", "json")
    assert json.loads(res.stdout)["warnings"] == []


def test_compare_sweep_plan_and_hw_show_on_a_forced_entry_say_so(invoke, isolated_user_hwdb):
    """The commands that read a forced entry's figures warn of it as analyze does, in text,
    JSON and HTML (compare: the one forced entry of two; sweep), and hw show names it."""
    from html import escape

    probe.save_entry(_forced_past_checks(), "mybox", force=True)
    probe.save_entry(steady(), "quiet")
    sentence = (f"entry mybox was saved with --force past the probe's own checks: "
                f"{FORCED_REASONS[0]}; {FORCED_REASONS[1]}; its figures, and the predictions "
                f"from them, may be a disturbed run's: `roofline probe --save mybox --force` "
                f"on an idle machine replaces them")
    model = "examples/mlp-1024-4096-1000.yaml"
    runs = {"compare": ("compare", model, "--hw", "quiet", "--hw", "mybox", "--dtype", "fp32"),
            "sweep": ("sweep", model, "--hw", "mybox", "--dtype", "fp32", "--batch", "1..4")}
    for name, args in runs.items():
        res = invoke(*args, "--format", "json")
        assert res.exit_code == 0, (name, res.output)
        assert json.loads(res.stdout)["warnings"] == [sentence], name
        res = invoke(*args)
        assert " ".join(res.stdout.split()).count(f"warning: {sentence}") == 1, name
        res = invoke(*args, "--format", "html")
        page = " ".join(res.stdout.split())
        assert escape(sentence) in page, name
    # the quiet entry alone: no such warning
    res = invoke("compare", model, "--hw", "quiet", "--hw", "a100-sxm4-80gb", "--dtype", "fp32",
                 "--format", "json")
    assert json.loads(res.stdout)["warnings"] == []
    res = invoke("hw", "show", "mybox")
    assert res.exit_code == 0
    assert f"warning: {sentence}" in " ".join(res.stdout.split())
    assert "warning:" not in invoke("hw", "show", "quiet").stdout


def test_hw_local_checks_the_directory_before_probing(monkeypatch, isolated_user_hwdb):
    # issue 25, class 8: a read-only user directory used to fail after 20 s of probing
    monkeypatch.setattr(runner, "run_probe", lambda **kwargs: pytest.fail("probed"))
    isolated_user_hwdb.chmod(0o500)
    try:
        if os.access(isolated_user_hwdb, os.W_OK):
            pytest.skip("running as root: a read-only mode does not stop root")
        with pytest.raises(ProbeSaveError, match=r"^hardware='local' saves a quick probe of "
                                                 r"this machine, but cannot save into .*user-"
                                                 r"hwdb: .*user-hwdb is not writable"):
            probe.local_hardware()
    finally:
        isolated_user_hwdb.chmod(0o700)


def test_hw_local_checks_the_directory_before_probing_as_root_too(monkeypatch, tmp_path):
    # a user directory below a regular file cannot be made, whoever runs it
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("ROOFLINE_HWDB", str(blocker / "hwdb"))
    monkeypatch.setattr(runner, "run_probe", lambda **kwargs: pytest.fail("probed"))
    with pytest.raises(ProbeSaveError, match=r"saves a quick probe of this machine, but "
                                             r"cannot save into .*file is not a directory"):
        probe.local_hardware()


def test_hw_local_does_not_save_an_unstable_probe(monkeypatch, isolated_user_hwdb):
    result = steady()
    result.measured["gemm_gflops"].update(fp32=40.0)
    monkeypatch.setattr(runner, "run_probe", lambda **kwargs: result)
    with pytest.raises(ProbeSaveError) as caught:
        probe.local_hardware()
    # nothing saved, so the next --hw local probes again: the line says what that costs and
    # names the probe command's --force (analyze's own --force is its chart's)
    assert caught.value.text(lambda name, value: f"--hw {value}") == (
        "the quick probe behind --hw local failed its own check: fp32 GEMM ran slower than "
        "fp64 (40.0 < 50.0 GFLOP/s); nothing saved, so every --hw local probes again: run "
        "`roofline probe --save local` when the machine is idle, or `roofline probe --quick "
        "--save local --force` to keep this machine's figures as they come")
    assert list(isolated_user_hwdb.iterdir()) == []
    # a real probe records its duration (metadata duration_s), and the line gives it: 31.2 s
    result.metadata["duration_s"] = 31.2
    with pytest.raises(ProbeSaveError, match=r"; nothing saved, so every hardware='local' "
                                             r"probes again \(this one took 31\.2 s\): run "):
        probe.local_hardware()
    assert list(isolated_user_hwdb.iterdir()) == []


def test_analyze_hw_local_on_a_busy_machine_ends_in_one_line(invoke, monkeypatch,
                                                              isolated_user_hwdb):
    # other programs kept 0.89 CPUs busy (a new user's 2-vCPU VM): over the 0.25 limit
    result = steady()
    result.details["other_load_cpus"] = 0.89
    result.metadata["duration_s"] = 23.2
    monkeypatch.setattr(runner, "run_probe", lambda **kwargs: result)
    res = invoke("analyze", "examples/mlp-1024-4096-1000.yaml", "--hw", "local",
                 "--dtype", "fp32")  # the example is fp16: its probe would have no fp16 peak
    assert res.exit_code == 2
    assert res.stderr.splitlines()[-1] == (
        "Error: the quick probe behind --hw local failed its own check: other programs kept "
        "0.89 CPUs busy on average while it ran (more than 0.25); nothing saved, so every "
        "--hw local probes again (this one took 23.2 s): run `roofline probe --save local` "
        "when the machine is idle, or `roofline probe --quick --save local --force` to keep "
        "this machine's figures as they come")
    assert "about 10-30 s, longer on a busy machine" in res.stderr.splitlines()[0]
    assert list(isolated_user_hwdb.iterdir()) == []


def test_checks_module_is_the_one_save_uses(monkeypatch, isolated_user_hwdb):
    monkeypatch.setattr(checks, "unstable_reasons", lambda result: ["made up"])
    with pytest.raises(ProbeSaveError, match="check failed: made up;"):
        probe.save_entry(steady(), "box")


def test_a_gemm_timed_within_the_call_overhead_is_held_at_the_ceiling():
    from roofline.probe.calibrate import gemm_efficiency

    # 32^3 fp32: 2 x 32^3 = 65,536 FLOP; measured peak 100 GFLOP/s, theoretical 200 GFLOP/s
    work, peak, ceiling = 2 * 32**3, 100e9, 200e9
    # timed at 3.0 us after an 8^3 overhead of 2.0 us: 65,536 / 1.0e-6 / 100e9 = 0.65536
    assert gemm_efficiency(work, 3.0e-6, 2.0e-6, peak, ceiling) == (
        pytest.approx(0.65536), False)
    # timed at 1.9 us, under the 2.0 us overhead (the two timed apart on a busy machine): the
    # math is taken at the ceiling, 65,536 / 200e9 = 0.32768 us, an efficiency of 200 / 100 = 2
    # of the measured peak: exactly the ceiling, which the save check lets through
    value, held = gemm_efficiency(work, 1.9e-6, 2.0e-6, peak, ceiling)
    assert held and value == pytest.approx(2.0)
    assert value * peak / ceiling <= 1.0
