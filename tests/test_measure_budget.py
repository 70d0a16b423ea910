"""``analyze --measure`` is bounded in time (issue 25, class 8: a 9000^3 fp32 GEMM ran for
minutes): a run whose estimated timing passes its budget is refused in one line before any
timing, and a run under way stops each shape's repeats when the budget is spent."""

from __future__ import annotations

import copy
import platform

import pytest
import yaml
from test_predict import ENTRY, HOST, FakeClock, fake_kernels, spec

from roofline.analysis import measure as measure_mod
from roofline.analysis.report import analyze
from roofline.model.network import network_from_dict

BIG = {"name": "big", "batch": 9000, "dtype": "fp32", "mode": "inference",
       "layers": [{"type": "linear", "in": 9000, "out": 9000}]}


def big_report():
    return analyze(network_from_dict(copy.deepcopy(BIG), "big.yaml"), spec())


def test_the_budget_and_the_calls_are_the_stated_ones():
    assert measure_mod.MEASURE_BUDGET_S == 60.0
    # calibration, warm-up, 4 rounds of 2 values
    assert measure_mod.CALLS_PER_SHAPE == 1 + 1 + 4 * 2
    from roofline.cli import analyze as command

    (option,) = [p for p in command.params if p.name == "measure_budget"]
    assert option.default == measure_mod.MEASURE_BUDGET_S


def test_the_estimate_is_ten_calls_at_the_roofline_time():
    # MM1 = 9000 x 9000 x 9000 fp32: 2 x 9000^3 = 1.458e12 FLOP; bytes 4 x 3 x 9000^2 =
    # 9.72e8, 1500 FLOP/B, above the ridge 0.1e12 / 20e9 = 5: compute-bound, 1.458e12 / 1e11
    # = 14.58 s a call; 10 calls = 145.8 s
    assert measure_mod.estimated_seconds(big_report()) == pytest.approx(145.8)


def test_a_small_shape_counts_the_calibrated_value():
    # 64 x 64 x 64: 2 x 64^3 / 1e11 = 5.2 us < 5 ms a value: 10 x 5 ms = 50 ms
    small = copy.deepcopy(BIG) | {"batch": 64}
    small["layers"] = [{"type": "linear", "in": 64, "out": 64, "repeat": 3}]
    report = analyze(network_from_dict(small, "small.yaml"), spec())
    assert measure_mod.estimated_seconds(report) == pytest.approx(10 * 0.005)  # one shape


def test_a_run_over_the_budget_is_refused_before_any_kernel():
    def make(*args):
        raise AssertionError("no kernel is made")

    with pytest.raises(measure_mod.MeasureError) as caught:
        measure_mod.measure_report(big_report(), None, make, "fake", FakeClock(), HOST)
    assert str(caught.value) == (
        "timing the 1 distinct GEMM shape of big on box would take at least 146 s (10 calls "
        "each at its roofline time), over the 60 s budget; lower batch=... or seq=..., or "
        "raise measure_budget=...")
    measure_mod.check_budget(big_report(), 146.0)  # a larger budget lets it through


def test_a_run_under_way_stops_at_its_budget():
    # two shapes whose roofline times are microseconds, but whose calls take 1 s each here,
    # timed together in rounds (budget 3 s): shape 1's calibration 1 s, its warm-up to 2 s;
    # shape 2's calibration to 3 s, no warm-up (it would end at 4 s > 3 s); the first round
    # runs, one value each (two would pass the budget) without a warm call, to 5 s; no more
    # rounds
    net = network_from_dict({"name": "two", "batch": 8, "dtype": "fp32", "mode": "inference",
                             "layers": [{"type": "linear", "in": 64, "out": 32},
                                        {"type": "linear", "in": 32, "out": 16}]}, "two.yaml")
    report = analyze(net, spec())
    clock = FakeClock()
    make, made = fake_kernels(clock, {(8, 32, 64): 1.0, (8, 16, 32): 1.0})
    said = []
    measured = measure_mod.measure_report(report, said.append, make, "fake", clock, HOST,
                                          budget_s=3.0)
    assert clock.now == 5.0
    assert all(r.measured.best_s == 1.0 for r in measured.results)
    # each phase said as it ends (the calibration at 3 s, the round at 5 s), then the shapes:
    # one value each, which has no spread; the estimate, 10 values of 5 ms a shape, is the
    # least the timing takes, and the budget stops it
    assert said == [
        "measuring 2 distinct GEMM shapes of 2 GEMMs (fake), 4 rounds: at least 100 ms of "
        "timing, stopped at the 3 s budget ...",
        "  loops calibrated and warmed up: 2 shapes, 3 s",
        "  round 1 of 4 done: 2 shapes, 5 s",
        "  rounds stopped at 1 of 4 by the budget (the next would end past it)",
        "  [1/2] 8x32x64 fp32: 1 s (1 value, no spread; 1 of 8 values, within the 3 s "
        "budget)",
        "  [2/2] 8x16x32 fp32: 1 s (1 value, no spread; 1 of 8 values, within the 3 s "
        "budget)",
        "  timed in 5 s, making and checking each shape's operands included"]
    mm1 = measured.results[0].to_dict()
    assert (mm1["measured_values"], mm1["measured_spread"]) == (1, 0.0)


def test_cli_refuses_in_one_line_and_names_the_way_past(invoke, isolated_user_hwdb, tmp_path):
    entry = copy.deepcopy(ENTRY)
    entry["measured"]["machine"] = f"{platform.node()}: AMD EPYC, 2 cores, Linux"
    (isolated_user_hwdb / "box.yaml").write_text(yaml.safe_dump(entry))
    model = tmp_path / "big.yaml"
    model.write_text(yaml.safe_dump(BIG))
    res = invoke("analyze", model, "--hw", "box", "--measure")
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        "Error: --measure: timing the 1 distinct GEMM shape of big on box would take at least "
        "146 s (10 calls each at its roofline time), over the 60 s budget; lower --batch or "
        "--seq, or raise --measure-budget"]
    res = invoke("analyze", model, "--hw", "box", "--measure-budget", "200")
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        "Error: --measure-budget: goes with --measure (it bounds the time --measure spends "
        "timing GEMMs)"]


@pytest.mark.parametrize("budget, shown", [
    ("nan", "nan"), ("NaN", "nan"), ("-nan", "nan"), ("inf", "inf"), ("0", "0.0"), ("-1", "-1.0")])
def test_a_budget_that_bounds_nothing_is_refused(invoke, tmp_path, budget, shown):
    # nan passed click's range (every comparison with it is false), and then bounded nothing:
    # estimate > nan never holds. It is refused as inf, 0 and -1 are, before the model is read
    res = invoke("analyze", tmp_path / "absent.yaml", "--hw", "v100", "--measure",
                 "--measure-budget", budget)
    assert res.exit_code == 2
    assert res.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '--measure-budget': {shown} is not in the range "
        f"1<=x<=86400 (see `roofline analyze --help`)")


def test_the_help_states_the_estimate_the_code_makes(invoke):
    # the help is a literal (--help imports no analysis); it said 9 calls where the code makes 10
    from roofline.analysis.measure import CALLS_PER_SHAPE, MIN_TIME_S

    text = " ".join(invoke("analyze", "--help").stdout.split())
    assert (f"({CALLS_PER_SHAPE} calls of each distinct shape, each at least its roofline time "
            f"or {MIN_TIME_S * 1e3:g} ms)") in text


@pytest.mark.parametrize("load, warned", [(0.43, True), (0.15, False), (None, False)])
def test_gemms_timed_on_a_shared_machine_say_so(monkeypatch, load, warned):
    # other programs' load through the timing (/proc/stat, as the probe reads it): above 0.15
    # CPUs the measured times are a shared machine's; a new user saw 1.97-3.45x with no word
    class Meter:
        def total(self):
            return load

    monkeypatch.setattr(measure_mod, "LoadMeter", Meter)
    net = network_from_dict({"name": "one", "batch": 8, "dtype": "fp32", "mode": "inference",
                             "layers": [{"type": "linear", "in": 64, "out": 32}]}, "one.yaml")
    clock = FakeClock()
    make, _ = fake_kernels(clock, {(8, 32, 64): 1e-3})
    measured = measure_mod.measure_report(analyze(net, spec()), None, make, "fake", clock, HOST)
    sentence = ("other programs kept 0.43 CPUs busy on average while --measure timed the GEMMs: "
                "the measured times are a shared machine's (a multi-threaded call waits for "
                "the thread another program holds); rerun when the machine is idle")
    assert (sentence in measured.warnings) == warned
    data = measured.to_dict()
    assert data.get("measured_other_load_cpus") == load and (sentence in data["warnings"]) == warned


def test_weight_only_gemms_are_refused_not_timed_as_dense_ones(invoke, isolated_user_hwdb):
    """An int4-weight GEMM timed as a dense fp32 one would set a dense kernel's time beside the
    weight-only prediction: --measure refuses it in one line, naming the GEMMs."""
    entry = copy.deepcopy(ENTRY)
    entry["measured"]["machine"] = f"{platform.node()}: AMD EPYC, 2 cores, Linux"
    (isolated_user_hwdb / "box.yaml").write_text(yaml.safe_dump(entry))
    res = invoke("analyze", "examples/mlp-1024-4096-1000.yaml", "--hw", "box", "--measure",
                 "--mode", "inference", "--dtype", "fp32", "--weights", "int4")
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        "Error: --measure: timing is of dense GEMMs (A and B in the math dtype), and MM1, MM2 "
        "keep B as int4 (weight-only or a narrow KV cache): their kernels are not timed here, "
        "and a dense timing would not be theirs; drop --weights / --kv-cache to time the "
        "dense GEMMs"]
    dense = invoke("analyze", "examples/mlp-1024-4096-1000.yaml", "--hw", "box",
                   "--mode", "inference", "--dtype", "fp32", "--weights", "int4")
    assert dense.exit_code == 0, dense.stderr


def _two_shapes(per_call_s: float, budget_s: float = 60.0):
    net = network_from_dict({"name": "two", "batch": 8, "dtype": "fp32", "mode": "inference",
                             "layers": [{"type": "linear", "in": 64, "out": 32},
                                        {"type": "linear", "in": 32, "out": 16}]}, "two.yaml")
    clock = FakeClock()
    make, _ = fake_kernels(clock, {(8, 32, 64): per_call_s, (8, 16, 32): per_call_s})
    said = []
    measured = measure_mod.measure_report(analyze(net, spec()),
                                          lambda line: said.append((clock.now, line)), make,
                                          "fake", clock, HOST, budget_s=budget_s)
    return measured, said


def test_each_round_is_said_as_it_ends():
    # the rounds run over both shapes, so no shape is done before the last round: a line per
    # round, said when it ends. A call takes 2^-10 s (binary: the clock's sums stay exact).
    # Calibration: 1 call, then int(1.2 x 5 ms / 2^-10 s) = int(6.14) = 6 calls (5.86 ms >= 5
    # ms); a warm-up of 6 calls: 13 calls a shape, 26 for both (25.4 ms). A round: a warm call
    # and 2 values of 6 calls, 13 calls a shape, 26 for both: rounds end at 52, 78, 104 and
    # 130 calls (50.8, 76.2, 102 and 127 ms)
    call = 2.0 ** -10
    measured, said = _two_shapes(call)
    phases = [(when, line) for when, line in said if not line.startswith("  [")]
    assert phases == [
        (0.0, "measuring 2 distinct GEMM shapes of 2 GEMMs (fake), 4 rounds: at least 100 ms "
              "of timing, stopped at the 60 s budget ..."),
        (26 * call, "  loops calibrated and warmed up: 2 shapes, 25.4 ms"),
        (52 * call, "  round 1 of 4 done: 2 shapes, 50.8 ms"),
        (78 * call, "  round 2 of 4 done: 2 shapes, 76.2 ms"),
        (104 * call, "  round 3 of 4 done: 2 shapes, 102 ms"),
        (130 * call, "  round 4 of 4 done: 2 shapes, 127 ms"),
        (130 * call, "  timed in 127 ms, making and checking each shape's operands included")]
    # 8 values of one call each: best = median = 1 s / 1024 = 977 us (three digits, as every
    # time the tool prints: it read 976.6 us, and a 1 s GEMM 1000000.0 us), spread 0 of 8 values
    assert [line for _, line in said if line.startswith("  [")] == [
        "  [1/2] 8x32x64 fp32: 977 us (median 977 us, spread 0.0%, rounds 0% apart)",
        "  [2/2] 8x16x32 fp32: 977 us (median 977 us, spread 0.0%, rounds 0% apart)"]
    mm1 = measured.results[0].to_dict()
    assert (mm1["measured_values"], mm1["measured_spread"]) == (8, 0.0)
    assert _measured_cells(measured)[1:2] == ["0%"]  # a spread of 8 values: none
    assert _measured_cells(measured)[-1] == ""  # no note


def _measured_cells(measured) -> list[str]:
    """MM1's cells in the table's measured columns: measured, spread, TFLOP/s, of roof,
    meas/pred, note ("" where there is none). The row's words: MM1, roof and predicted (a
    number and a unit each), then those columns."""
    from roofline.output.report import report_table

    lines = report_table(measured).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("GEMM ")
                  and line.rstrip().endswith("note"))
    words = lines[header + 2].split()
    assert words[0] == "MM1"
    return [" ".join(words[5:7]), *words[7:11], " ".join(words[11:])]


def test_a_single_value_has_no_spread():
    # 1 s a call in a 3 s budget: one value a shape (test_a_run_under_way_stops_at_its_budget)
    measured, _ = _two_shapes(1.0, budget_s=3.0)
    mm1 = measured.results[0].to_dict()
    # JSON keeps its number (the contract's type) and says how many values it is of
    assert (mm1["measured_values"], mm1["measured_spread"]) == (1, 0.0)
    cells = _measured_cells(measured)
    assert cells[0] == "1 s" and cells[1] == "-" and cells[-1] == "1 value"


def test_the_budget_counts_making_the_operands():
    # making a shape's operands and checking a call (a float64 reference) takes 1.5 s here
    # each, 3 s for two, of a 3.125 s budget: 0.125 s = 128 calls of 2^-10 s are left for the
    # timing. Calibration ends at 26 calls and the rounds, 26 calls each, at 52, 78 and 104;
    # a fourth would end at 130, past 128: 3 rounds (all 4 when making was not counted)
    call = 2.0 ** -10
    net = network_from_dict({"name": "two", "batch": 8, "dtype": "fp32", "mode": "inference",
                             "layers": [{"type": "linear", "in": 64, "out": 32},
                                        {"type": "linear", "in": 32, "out": 16}]}, "two.yaml")
    clock = FakeClock()
    make, _ = fake_kernels(clock, {(8, 32, 64): call, (8, 16, 32): call})

    def slow_make(*args, **kwargs):
        clock.now += 1.5
        return make(*args, **kwargs)

    said = []
    measured = measure_mod.measure_report(analyze(net, spec()), said.append, slow_make, "fake",
                                          clock, HOST, budget_s=3.125)
    assert "  rounds stopped at 3 of 4 by the budget (the next would end past it)" in said
    assert measured.results[0].to_dict()["measured_values"] == 6  # 3 rounds of 2 values
    assert said[-1] == "  timed in 3.1 s, making and checking each shape's operands included"


def test_measure_refuses_an_entry_that_names_no_machine(tmp_path, invoke):
    # origin: measured with no measured: record (never probed, or written by hand): nothing
    # says which machine its figures are, so nothing to check this one against (0.9.0)
    data = copy.deepcopy(ENTRY)
    del data["measured"]
    path = tmp_path / "box.yaml"
    path.write_text(yaml.safe_dump(data))
    model = tmp_path / "m.yaml"
    model.write_text(yaml.safe_dump({"batch": 64, "dtype": "fp32", "mode": "inference",
                                     "layers": [{"type": "linear", "in": 64, "out": 64}]}))
    result = invoke("analyze", model, "--hw", path, "--measure")
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: --measure: GEMMs are timed on the machine an entry was measured on, and "
        f"{data['name']} has no measured.machine (the record `roofline probe --save` writes); "
        f"use --hw local (or an entry saved by `roofline probe --save` here)\n")
