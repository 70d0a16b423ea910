"""roofline gemm, compare and sweep: library results against hand arithmetic, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import network_from_yaml
from roofline.analysis.whatif import compare, gemm_report, nearest_dtype, sweep
from roofline.analysis.whatif_values import parse_batches
from roofline.output.whatif import comparison_dict, comparison_table
from roofline.output.whatif_why import change_text

EXAMPLES = Path(__file__).parent.parent / "examples"

EXAMPLE = "examples/mlp-1024-4096-1000.yaml"


def test_gemm_is_the_analyze_object_with_one_forward_gemm(invoke):
    data = json.loads(invoke("gemm", 512, 4096, 1024, "--hw", "v100", "--format", "json").stdout)
    (mm1,) = data["gemms"]
    assert (mm1["name"], mm1["pass"], mm1["m"], mm1["n"], mm1["k"]) == ("MM1", "forward", 512,
                                                                        4096, 1024)
    # NVIDIA's table: 2*512*4096*1024 / (2*(512*1024 + 1024*4096 + 512*4096)) = 315.1 FLOP/B
    assert mm1["intensity"] == pytest.approx(315.08, abs=0.01)
    assert data["batch"] == 512 and data["mode"] == "inference"


def test_gemm_reads_m_as_the_batch_and_says_so(invoke):
    # 1 x 4096 x 1024 on V100: memory-bound; batch advice is about M: the 1024 -> 4096 closed
    # form gives 168 (see the sweep test); a GEMV gets no padding advice
    result = invoke("gemm", 1, 4096, 1024, "--hw", "v100")
    assert "M is read as the batch" in result.stdout
    assert "MM1: batch >= 168 makes it compute-bound" in result.stdout
    assert "pad to" not in result.stdout


@pytest.mark.parametrize("args, message", [
    (("gemm", 0, 8, 8, "--hw", "v100"), "gemm: M: expected a positive integer, got '0'"),
    (("gemm", 8, "x", 8, "--hw", "v100"), "gemm: N: expected a positive integer, got 'x'"),
    (("compare", EXAMPLE, "--hw", "v100"), "--hw: give two devices or more"),
    (("compare", EXAMPLE, "--hw", "a100,h100"),
     "--hw: 'a100,h100' is one name: give each device its own --hw (--hw a100 --hw h100)"),
    (("sweep", EXAMPLE, "--hw", "v100", "--batch", "0..8"), "--batch: expected 1 <= a <= b"),
    (("sweep", EXAMPLE, "--hw", "v100", "--batch", "abc"), "--batch: expected positive integers"),
    (("sweep", EXAMPLE, "--hw", "v100", "--batch", "1,0"), "--batch: expected positive integers"),
])
def test_bad_input_is_one_line_and_exit_2(invoke, args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: " + message), result.stderr


def test_v100_to_a100_memory_bound_gains_the_bandwidth_ratio():
    # batch 1, 1024 -> 4096 fp16: memory-bound on both (about 1 FLOP/B), so time = bytes / BW
    # and the speedup is 2039 / 900 = 2.27x
    net = network_from_yaml("batch: 1\ndtype: fp16\nmode: inference\nmlp: [1024, 4096]")
    c = compare(net, ["v100-sxm2-16gb", "a100-sxm4-80gb"])
    assert c.speedup(c.reports[1]) == pytest.approx(2039 / 900)
    assert change_text(c.why(0, c.reports[1]), "v100-sxm2-16gb") == ("memory-bound on both: the bandwidth ratio 2039/900 = "
                                      "2.27x")


def test_v100_to_a100_compute_bound_gains_the_peak_ratio():
    # batch 4096: 2*4096*4096*1024 / (2*(4096*1024 + 1024*4096 + 4096*4096)) = 682.7 FLOP/B,
    # above both ridges (138.9, 153.0): time = FLOPs / peak, speedup 312 / 125 = 2.496 ("2.5x")
    net = network_from_yaml("batch: 4096\ndtype: fp16\nmode: inference\nmlp: [1024, 4096]")
    c = compare(net, ["v100", "a100"])
    data = comparison_dict(c)
    assert data["devices"][1]["speedup"] == pytest.approx(312 / 125)
    assert data["gemms"][0]["speedup"]["a100-sxm4-80gb"] == pytest.approx(312 / 125)
    assert data["gemms"][0]["bound"] == {"v100-sxm2-16gb": "compute", "a100-sxm4-80gb": "compute"}
    assert "peak ratio 312/125 = 2.50x" in data["gemms"][0]["why"]["a100-sxm4-80gb"]
    assert data["verdict"].startswith("a100-sxm4-80gb is the fastest")
    assert set(data) >= {"model", "baseline", "devices", "gemms", "verdict"}
    assert set(data["devices"][0]) >= {"hardware", "dtype", "time_s", "speedup",
                                       "memory_bound_time_fraction"}


def test_a_gemm_that_changes_side_says_so():
    # A100 80GB (ridge 153.0) -> V100 (138.9) at batch 176, 1024 -> 4096 fp16:
    # 176 * 4,194,304 / (5120 * 176 + 4,194,304) = 738,197,504 / 5,095,424 = 144.9 FLOP/B,
    # memory-bound on the A100 and compute-bound on the V100
    net = network_from_yaml("batch: 176\ndtype: fp16\nmode: inference\nmlp: [1024, 4096]")
    c = compare(net, ["a100", "v100"])
    assert change_text(c.why(0, c.reports[1]), c.baseline.hardware.name).startswith("turns compute-bound (intensity 144.9 >= ridge 138.9")


def test_nearest_dtype_rule():
    assert nearest_dtype("fp16", ("fp64", "fp32", "bf16", "int8")) == "bf16"  # same size, float
    assert nearest_dtype("fp16", ("fp64", "fp32")) == "fp32"                  # then wider
    assert nearest_dtype("tf32", ("fp64", "fp32", "fp16")) == "fp32"
    assert nearest_dtype("int8", ("fp64", "fp32", "bf16")) == "bf16"           # wider, other kind
    assert nearest_dtype("fp16", ("fp16",)) == "fp16"


def test_mixed_cpu_gpu_comparison_runs_the_nearest_dtype(invoke):
    result = invoke("compare", EXAMPLE, "--hw", "a100", "--hw", "xeon-platinum-8480plus",
                    "--hw", "epyc-7763", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [d["dtype"] for d in data["devices"]] == ["fp16", "bf16", "fp32"]
    assert "has no fp16 peak: runs bf16" in data["devices"][1]["dtype_note"]
    # the prediction beside the bound: on a datasheet GPU entry at least the bound plus the
    # 0.9 us launch latency per GEMM; on a datasheet CPU entry the bound itself (nothing
    # documented to add)
    a100, xeon = data["devices"][0], data["devices"][1]
    assert a100["predicted_gemm_time_s"] >= a100["time_s"] + 5 * 0.9e-6 - 1e-12
    assert xeon["predicted_gemm_time_s"] == pytest.approx(xeon["time_s"])
    mm1 = data["gemms"][0]
    assert mm1["predicted_time_s"]["a100-sxm4-80gb"] >= mm1["time_s"]["a100-sxm4-80gb"] + 0.9e-6
    table = invoke("compare", EXAMPLE, "--hw", "a100", "--hw", "xeon-platinum-8480plus").stdout
    assert "note: xeon-platinum-8480plus has no fp16 peak: runs bf16" in table
    assert table.rstrip().splitlines()[-1].startswith("verdict: ")


def test_sweep_transition_matches_the_closed_form():
    # 1024 -> 4096 fp16 on V100: I(B) = 4,194,304 B / (5120 B + 4,194,304) >= 125e12/900e9
    # = 138.89 gives B >= 138.89 * 4,194,304 / (4,194,304 - 138.89 * 5120) = 167.2 -> 168
    net = network_from_yaml("batch: 1\ndtype: fp16\nmode: inference\nmlp: [1024, 4096]")
    s = sweep(net, "v100", "1..4096")
    assert s.transitions() == {"MM1": 168}
    points = s.to_dict()["points"]
    assert [p["batch"] for p in points] == [2**i for i in range(13)]
    assert [p["gemms"][0]["bound"] for p in points][7:9] == ["memory", "compute"]  # 128, 256
    assert points[0]["samples_per_s"] == pytest.approx(1 / points[0]["time_s"])
    assert all(g["predicted_time_s"] >= g["time_s"] for p in points for g in p["gemms"])


def test_batch_range_is_its_ends_and_the_powers_of_two_between():
    """A range gives the two values typed and every power of two strictly between: until
    0.9.0 ``3..100`` silently dropped 3 and 100 (the powers of two 4..64 only)."""
    assert parse_batches("1..16") == (1, 2, 4, 8, 16)  # ends that are powers of two: as before
    assert parse_batches("3..100") == (3, 4, 8, 16, 32, 64, 100)
    assert parse_batches("4..64") == (4, 8, 16, 32, 64)
    assert parse_batches("3..4") == (3, 4)
    assert parse_batches("5..7") == (5, 7)  # no power of two between: the ends (was an error)
    assert parse_batches("6..6") == (6,)
    assert parse_batches("100..129") == (100, 128, 129)
    assert parse_batches("256..4096", "seqs") == (256, 512, 1024, 2048, 4096)
    assert parse_batches("512, 1,8,64,8") == (1, 8, 64, 512)


def test_a_swept_range_analyzes_the_ends_the_user_typed(invoke):
    """The new user's ``sweep ... --batch 3..100`` analyzed 4..64 only; the same parser reads
    ``--seq``: 100..300 is 100, the powers of two 128 and 256, and 300."""
    data = json.loads(invoke("sweep", EXAMPLE, "--hw", "a100", "--batch", "3..100", "--format",
                             "json").output)
    assert data["batches"] == [3, 4, 8, 16, 32, 64, 100]
    assert [p["batch"] for p in data["points"]] == [3, 4, 8, 16, 32, 64, 100]
    data = json.loads(invoke("sweep", EXAMPLES / "hf" / "llama-2-7b.json", "--hw", "a100",
                             "--batch", "1", "--seq", "100..300", "--mode", "inference",
                             "--format", "json").output)
    assert data["axis"] == "seq" and data["seqs"] == [100, 128, 256, 300]
    assert [p["seq"] for p in data["points"]] == [100, 128, 256, 300]


def test_sweep_cli_json_and_plot(invoke, tmp_path):
    plot = tmp_path / "sweep.png"
    result = invoke("sweep", EXAMPLE, "--hw", "v100", "--batch", "1,8,64,512", "--format", "json",
                    "--plot", plot)
    data = json.loads(result.stdout)
    assert set(data) >= {"model", "hardware", "points", "transitions"}
    assert data["transitions"]["MM1"] == 168 and plot.stat().st_size > 0
    # V100 SXM2: no sustained clock in its entry, its 1.53 GHz boost
    assert data["prediction_fit"]["clock"] == {"ghz": 1.53, "basis": "boost", "boost_ghz": 1.53}


def test_compare_plot_is_written(invoke, tmp_path):
    plot = tmp_path / "compare.png"
    result = invoke("compare", EXAMPLE, "--hw", "v100", "--hw", "a100", "--plot", plot)
    assert result.exit_code == 0 and plot.stat().st_size > 0


def test_gemm_report_api_with_quantization():
    report = gemm_report(512, 512, 8192, "a100", quantization=True)
    assert report.quantization and report.results[0].quantization.efficiency < 0.6


def test_compare_substitution_keeps_every_model_field():
    """A device without the model's dtype runs another; nothing else about the model changes
    (seq, phase, optimizer, repeats, accumulation: every field but the dtypes, by construction)."""
    import dataclasses

    from roofline.analysis.whatif import substitute_dtype
    from roofline.model.network import load_network

    net = load_network(EXAMPLES / "hf" / "bert-base-uncased.json").with_overrides(
        batch=32, seq=128, mode="train", dtype="bf16", grad_accumulation="fp32")
    net = dataclasses.replace(net, optimizer="adam")
    run = substitute_dtype(net, "fp16")
    for field in dataclasses.fields(net):
        if field.name not in ("dtype", "output_dtype"):
            assert getattr(run, field.name) == getattr(net, field.name), field.name
    assert run.dtype == "fp16"


def test_compare_across_a_dtype_substitution_matches_direct_analysis(tmp_path):
    """The issue's case: a bf16 MLP trained with Adam on A100 and V100 (no bf16: fp16). Each
    device's step must equal the model analyzed directly on it in the dtype it runs, with the
    optimizer update included (it vanished, and V100 came out 2.44x faster)."""
    from roofline import analyze_model

    model = tmp_path / "mlp.yaml"
    model.write_text("batch: 64\ndtype: bf16\nmode: train\noptimizer: adam\n"
                     "mlp: [1024, 4096, 4096, 1000]\n")
    result = compare(model, ["a100-sxm4-80gb", "v100-sxm2-16gb"])
    a100, v100 = result.reports
    assert v100.dtype == "fp16"
    assert any(r.op.kind == "adam-update" for r in v100.ops)
    direct = analyze_model(str(model), "v100-sxm2-16gb", dtype="fp16")
    assert v100.totals["time_s"] == pytest.approx(direct.totals["time_s"], rel=1e-12)
    assert a100.totals["time_s"] < v100.totals["time_s"]  # A100 is the faster device


def test_compare_of_a_config_json_keeps_seq():
    result = compare(EXAMPLES / "hf" / "bert-base-uncased.json",
                     ["a100-sxm4-80gb", "xeon-platinum-8180"], batch=32, seq=128, mode="train",
                     dtype="bf16")
    assert [r.network.seq for r in result.reports] == [128, 128]


def test_verdict_names_the_slowest_device_of_all_the_baseline_included():
    """Llama-2-7B decode on A100 (baseline), H100, H200: every step is memory-bound, so the
    times follow the bandwidths (2039, 3350, 4800 GB/s): H200 fastest, the A100 baseline the
    slowest (the verdict called H100 the slowest, at 1.64x)."""
    c = compare(EXAMPLES / "hf" / "llama-2-7b.json",
                ["a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb"], batch=1, seq=1024,
                mode="inference", phase="decode")
    assert c.fastest.hardware.name == "h200-sxm-141gb"
    assert c.slowest is c.baseline
    text = comparison_dict(c)["verdict"]
    assert text.startswith("h200-sxm-141gb is the fastest")
    assert "the baseline, a100-sxm4-80gb, is the slowest" in text
    assert "the slowest, h100" not in text


def test_compare_and_sweep_say_which_step_they_time():
    """seq and phase in compare's header and JSON, and in sweep's JSON (users copy them)."""
    from roofline.output.whatif import comparison_table

    c = compare(EXAMPLES / "hf" / "llama-2-7b.json", ["a100-sxm4-80gb", "h100-sxm5-80gb"],
                batch=8, seq=512, mode="inference", phase="decode")
    data = comparison_dict(c)
    assert (data["seq"], data["phase"], data["mode"]) == (512, "decode", "inference")
    assert "batch 8, seq 512, inference (decode)" in comparison_table(c).splitlines()[0]
    s = sweep(EXAMPLES / "hf" / "llama-2-7b.json", "a100-sxm4-80gb", [1, 8], seq=512,
              mode="inference", phase="decode")
    assert (s.to_dict()["seq"], s.to_dict()["phase"]) == (512, "decode")


def test_analyze_csv_rows_carry_seq_and_phase():
    import csv
    import io

    from roofline import analyze_model
    from roofline.output.report import reports_csv

    report = analyze_model(str(EXAMPLES / "hf" / "gpt2.json"), "a100-sxm4-80gb", batch=2,
                           seq=64, dtype="fp16", mode="inference", phase="decode")
    rows = list(csv.DictReader(io.StringIO(reports_csv([report]))))
    assert list(rows[0])[:5] == ["hardware", "batch", "mode", "seq", "phase"]
    assert {(r["seq"], r["phase"]) for r in rows} == {("64", "decode")}


def test_library_errors_name_the_argument_not_a_cli_flag():
    """The library has no flags: it names the argument; the CLI maps it to its option."""
    from roofline.errors import InputError

    with pytest.raises(InputError) as caught:
        compare(EXAMPLES / "mlp-1024-4096-1000.yaml", ["v100"])
    assert str(caught.value).startswith("hardware: give two devices or more")
    with pytest.raises(InputError) as caught:
        parse_batches("8..1")
    assert str(caught.value).startswith("batches: ") and "--" not in str(caught.value)


def test_compare_gives_each_devices_predicted_step_beside_the_roofline():
    """The predicted step of each device is analyze's: every GEMM and op at its predicted
    time on that device's own basis; its speedup is the baseline's over it, and the verdict
    says it after the roofline's."""
    from roofline import analyze_model

    c = compare(EXAMPLES / "hf" / "llama-2-7b.json", ["a100-sxm4-80gb", "h100-sxm5-80gb"],
                batch=1, seq=1024, mode="inference", phase="decode")
    data = comparison_dict(c)
    direct = [analyze_model(str(EXAMPLES / "hf" / "llama-2-7b.json"), hw, batch=1, seq=1024,
                            mode="inference", phase="decode").totals
              for hw in ("a100-sxm4-80gb", "h100-sxm5-80gb")]
    a100, h100 = data["devices"]
    assert a100["predicted_time_s"] == pytest.approx(direct[0]["predicted_time_s"], rel=1e-12)
    assert h100["predicted_time_s"] == pytest.approx(direct[1]["predicted_time_s"], rel=1e-12)
    assert a100["predicted_speedup"] == 1.0
    assert h100["predicted_speedup"] == pytest.approx(
        direct[0]["predicted_time_s"] / direct[1]["predicted_time_s"])
    # a kernel's fixed time and the DRAM share: the prediction is never under the roofline
    assert all(d["predicted_time_s"] > d["time_s"] for d in data["devices"])
    assert ("Predicted (a100-sxm4-80gb fitted, h100-sxm5-80gb fitted): h100-sxm5-80gb at "
            in data["verdict"])
    assert f"{h100['predicted_speedup']:.2f}x faster than a100-sxm4-80gb." in data["verdict"]


def test_a_comparison_of_clocks_of_different_bases_says_which_is_which():
    """T4 is predicted at the 0.9 GHz its hwdb entry says it holds through a long GEMM, L4 at its
    2.04 GHz boost (no sustained clock in its entry): the predicted ratio rests on that, so the
    verdict says it; two boost-clock entries need no such clause. The JSON gives each device's
    clock (``prediction_fit.clock``)."""
    c = compare(EXAMPLE, ["t4", "l4"])
    data = comparison_dict(c)
    assert ("the clocks differ in basis: t4 at the 0.9 GHz its entry says it holds through a "
            "long GEMM, l4 at its 2.04 GHz boost (its entry gives no sustained clock)."
            ) in data["verdict"]
    assert [d["prediction_fit"]["clock"] for d in data["devices"]] == [
        {"ghz": 0.9, "basis": "sustained", "boost_ghz": 1.59},
        {"ghz": 2.04, "basis": "boost", "boost_ghz": 2.04}]
    same = comparison_dict(compare(EXAMPLE, ["a100-sxm4-80gb", "h100-sxm5-80gb"]))
    assert "clocks differ" not in same["verdict"]


def test_devices_bound_by_different_roofs_are_said_to_be():
    """Batch 64 of the bf16 MLP: about 59 FLOP/B per GEMM, above EPYC 9654's ridge (43.622
    TFLOP/s / 921.6 GB/s = 47.3) and below Xeon 8480+'s (229.376 / 614.4 = 373.3): EPYC is
    compute-bound, the Xeon memory-bound, so neither the peak ratio (EPYC's is 5x lower) nor
    the bandwidth ratio alone explains the 1.20x: the verdict names both roofs. Neither entry
    has a prediction beyond its roofline (datasheet), so no predicted speedup is given."""
    c = compare(EXAMPLE, ["xeon-platinum-8480plus", "epyc-9654"], batch=64, dtype="bf16")
    data = comparison_dict(c)
    assert data["verdict"].startswith("epyc-9654 is the fastest")
    assert ("compute-bound where xeon-platinum-8480plus's is mostly memory-bound, so each runs "
            "at a different roof (peaks bf16 43.622 vs 229.376 TFLOP/s; bandwidth 921.6 vs "
            "614.4 GB/s)") in data["verdict"]
    assert [d["predicted_speedup"] for d in data["devices"]] == [None, None]
    assert data["verdict"].endswith("Predicted: xeon-platinum-8480plus, epyc-9654: datasheet, "
                                    "no prediction beyond the roofline.")


def test_sweep_points_carry_the_predicted_step_of_analyze():
    """Each point's predicted step is analyze's at that batch (GEMMs and ops at their predicted
    times), its samples/s the batch over it; the table has the column and the basis line; the
    CSV's last two columns are the GEMM's and the step's predicted times."""
    from roofline import analyze_model
    from roofline.output.whatif_sweep import sweep_csv, sweep_table

    s = sweep(EXAMPLE, "a100-sxm4-80gb", [1, 256])
    points = s.to_dict()["points"]
    for point in points:
        direct = analyze_model(EXAMPLE, "a100-sxm4-80gb", batch=point["batch"]).totals
        assert point["predicted_time_s"] == pytest.approx(direct["predicted_time_s"], rel=1e-12)
        assert point["predicted_samples_per_s"] == pytest.approx(
            point["batch"] / direct["predicted_time_s"])
        assert point["predicted_time_s"] > point["time_s"]
    table = sweep_table(s)
    assert "predicted  pred. samples/s" in table and "\npredicted: fitted" in table
    header, first = sweep_csv(s).splitlines()[:2]
    assert header.endswith(",predicted_time_s,predicted_step_time_s")
    assert float(first.split(",")[-1]) == pytest.approx(points[0]["predicted_time_s"])


def test_a_training_sweep_header_names_the_mode_once():
    """A training step's phase is its mode: the header read "fp16, train, train"; an
    inference step keeps its phase (prefill / decode)."""
    from roofline.output.whatif_header import sweep_header

    train = sweep(EXAMPLES / "hf" / "gpt2.json", "h100", [1], seq=128, dtype="fp16")
    assert sweep_header(train)[0] == "gpt2 on h100-sxm5-80gb: fp16, train (batch sweep)"
    decode = sweep(EXAMPLES / "hf" / "gpt2.json", "h100", [1], seq=128, dtype="fp16",
                   mode="inference", phase="decode")
    assert sweep_header(decode)[0] == ("gpt2 on h100-sxm5-80gb: fp16, inference, decode "
                                       "(batch sweep)")


def test_the_predicted_verdict_names_the_baseline_as_the_roofline_one_does():
    # the roofline's sentence says "x faster than <baseline>", the predicted one "than the
    # next": with three devices the two referred to different devices unsaid
    from roofline.output.whatif_verdict import predicted_verdict_text
    from roofline.units import seconds

    c = compare(EXAMPLES / "resnet50.yaml", ["v100", "a100", "h100"])
    v100, a100, h100 = (r.totals["predicted_time_s"] for r in c.reports)
    text = predicted_verdict_text(c)
    assert (f"h100-sxm5-80gb at {seconds(h100)} per step, {a100 / h100:.2f}x faster than "
            f"a100-sxm4-80gb (the next), {v100 / h100:.2f}x faster than v100-sxm2-16gb (the "
            f"baseline).") in text


def test_peaks_of_different_dtypes_are_named_with_their_dtypes_and_small_ratios_keep_digits():
    """The MLP in fp16 on an A100 against a Xeon 8380, which has no fp16 peak and runs fp32:
    the verdict said "the fp32 peak decides (11.776 vs 312 TFLOP/s)", 312 being the A100's
    fp16 peak. By hand, per GEMM: 11.776 / 312 = 0.0377 (it printed 0.04x; a CPU probe
    against a GPU, 0.00x)."""
    from roofline.units import times

    c = compare(EXAMPLE, ["a100-sxm4-80gb", "xeon-platinum-8380"], batch=512, dtype="fp16")
    data = comparison_dict(c)
    assert "the compute peak decides (fp32 11.776 TFLOP/s, datasheet, vs fp16 312, " \
           "datasheet)" in data["verdict"]
    table = comparison_table(c)
    assert "compute-bound on both: the peak ratio 11.776 (fp32)/312 (fp16) = 0.0377x" in table
    assert [times(x) for x in (0.000608, 0.0377, 0.52, 2.8712, 99.994, 1643.84)] == [
        "0.000608x", "0.0377x", "0.52x", "2.87x", "99.99x", "1644x"]


def test_the_verdict_splits_a_speedup_into_gemms_and_other_ops():
    """ResNet-50 in fp32 from an A100 to an H100 is 2.87x faster as a step, its GEMMs 3.43x
    (the fp32 peaks 67 / 19.5 = 3.44, a few GEMMs memory-bound) and its other ops, every one
    memory-bound on both, by the bandwidth ratio 3350 / 2039 = 1.64x: the peak ratio alone
    did not explain the step's."""
    c = compare("examples/resnet50.yaml", ["a100-sxm4-80gb", "h100-sxm5-80gb"], batch=64,
                dtype="fp32")
    verdict = comparison_dict(c)["verdict"]
    assert f"other ops {3350 / 2039:.2f}x)" in verdict
    assert "2.87x faster than a100-sxm4-80gb (GEMMs 3.43x, other ops 1.64x)" in verdict


def test_compare_says_each_gemms_pass_and_the_rows_it_leaves_out():
    """GPT-2 training: the LM head's three GEMMs read 'lm_head' three times with no pass, and
    the 11 repeated blocks' rows went unsaid (4 GEMMs forward and 8 backward each: 132)."""
    from roofline.output.whatif import comparison_markdown

    c = compare("examples/hf/gpt2.json", ["a100-sxm4-80gb", "h100-sxm5-80gb"], batch=2, seq=128,
                dtype="fp16", mode="train")
    table = comparison_table(c)
    heads = [line.split()[:3] for line in table.splitlines() if " lm_head " in line]
    assert [h[2] for h in heads] == ["fwd", "bwd-data", "bwd-wgt"]
    assert "(132 rows of repeated layer copies not shown: each repeats its first copy's; the " \
           "step times count every copy)" in table
    md = comparison_markdown(c)
    assert "\n- h100-sxm5-80gb vs a100-sxm4-80gb:\n  - " in md  # nested as in the text
    assert "(per device: time, m/c = memory/compute-bound, speedup over the baseline)" in md


def test_compares_precision_is_the_models_when_the_baseline_runs_another_dtype():
    # the MLP in fp16 with a Xeon 8380 (no fp16 peak: fp32) as the baseline: the header said
    # "A, B fp32 -> C fp32", the baseline's fallback, beside an A100 running fp16
    c = compare(EXAMPLE, ["xeon-platinum-8380", "a100-sxm4-80gb"], batch=64, dtype="fp16")
    line = comparison_table(c).splitlines()[1]
    assert line.startswith("precision (the model's; a device without its dtype runs the "
                           "nearest, as noted): A, B fp16 -> C fp16")


def test_compare_json_carries_each_devices_roof_figures_and_each_gemms_shape():
    # what the text table shows, for scripts: the ridge of the A100's fp16 312 TFLOP/s over
    # 2039 GB/s, 153.0 FLOP/B; MM1 of the MLP at batch 64, 64 x 4096 x 1024
    data = comparison_dict(compare(EXAMPLE, ["a100-sxm4-80gb", "h100-sxm5-80gb"], batch=64,
                                   dtype="fp16"))
    a100 = data["devices"][0]
    assert (a100["peak_flops_per_s"], a100["bandwidth_bytes_per_s"]) == (312e12, 2039e9)
    assert a100["ridge"] == pytest.approx(312e12 / 2039e9) and a100["origin"] == "datasheet"
    mm1 = data["gemms"][0]
    assert (mm1["m"], mm1["n"], mm1["k"], mm1["batch_count"]) == (64, 4096, 1024, 1)


def test_compare_csv_carries_each_gemms_shape_and_predicted_time():
    # the JSON's gemm fields in the CSV, after the nine columns it always had: MM1 of the MLP at
    # batch 64 is 64 x 4096 x 1024; its roofline time on the A100, 2*64*4096*1024 FLOPs at
    # 312 TFLOP/s against 2*(64*1024 + 1024*4096 + 64*4096) bytes at 2039 GB/s: memory-bound
    import csv
    import io

    from roofline.output.whatif import comparison_csv

    c = compare(EXAMPLE, ["a100-sxm4-80gb", "h100-sxm5-80gb"], batch=64, dtype="fp16")
    rows = list(csv.DictReader(io.StringIO(comparison_csv(c))))
    assert list(rows[0])[:9] == ["name", "layer", "pass", "hardware", "dtype", "time_s",
                                 "speedup", "bound", "why"]
    a100 = rows[0]
    assert (a100["name"], a100["hardware"]) == ("MM1", "a100-sxm4-80gb")
    assert (a100["m"], a100["n"], a100["k"], a100["batch_count"]) == ("64", "4096", "1024", "1")
    nbytes = 2 * (64 * 1024 + 1024 * 4096 + 64 * 4096)
    assert float(a100["time_s"]) == pytest.approx(nbytes / 2039e9)
    predicted = comparison_dict(c)["gemms"][0]["predicted_time_s"]
    assert float(rows[1]["predicted_time_s"]) == pytest.approx(predicted["h100-sxm5-80gb"])
    assert float(a100["predicted_time_s"]) > float(a100["time_s"])  # a prediction, not the roof


def test_compare_says_when_no_device_holds_the_step(invoke):
    """A new user's compare of Llama-2-7B training at batch 8, seq 4096 on a V100, an A100 and
    an H100 ranked all three with no word that the step fits none of them, where analyze and
    sweep say "does not fit". By hand, analyze's count (optimizer none): weights and gradients
    6,738,415,616 x 2 B = 13,476,831,232 each; activations, per block (T = 8 x 4096 = 32,768
    tokens, h = 4096, 2 B) T x 8h x 2 = 2,147,483,648 (norms' inputs, QKV input, Q K V, the
    projection's and the FFN's input) + T x (2 x 11008 up + 2 x 11008 gated inner) x 2 =
    2,885,681,152 + 8 x 32 heads x 4096 queries x 4 B of log-sum-exp = 4,194,304, so
    5,037,359,104 x 32 = 161,195,491,328, plus the final norm's and lm_head's inputs (T h 2 =
    268,435,456 each) and the logits (T x 32000 x 2 = 2,097,152,000): 163,829,514,240; and the
    1 GB workspace: 191,783,176,704 B, 192 GB, more than the 16.9, 85.1 and 85.0 GB CUDA reports
    on a V100 SXM2 16GB (16,945,512,448 B), an A100 and an H100 80GB."""
    from roofline.analysis.report import analyze
    from roofline.output.whatif import comparison_html

    c = compare(EXAMPLES / "hf" / "llama-2-7b.json",
                ["v100-sxm2-16gb", "a100-sxm4-80gb", "h100-sxm5-80gb"], seq=4096, batch=8)
    data = comparison_dict(c)
    assert [(d["memory_bytes"], d["capacity_bytes"], d["fits"]) for d in data["devices"]] == [
        (191_783_176_704, 16_945_512_448, False), (191_783_176_704, 85_100_068_864, False),
        (191_783_176_704, 85_017_493_504, False)]  # each as CUDA reports it
    # the figure is analyze's, not a second count
    alone = analyze(c.reports[2].network, c.reports[2].hardware).memory
    assert alone is not None and alone.total_bytes == 191_783_176_704 and alone.fits is False
    verdict = data["verdict"]
    assert verdict.startswith("h100-sxm5-80gb is the fastest (the step does not fit in its "
                              "memory: needs 192 GB of the 85 GB CUDA reports): ")
    assert "; none of them can hold the step. Predicted" in verdict
    assert "h100-sxm5-80gb (does not fit) at" in verdict
    table = comparison_table(c)
    # the header's fourth line says each capacity's basis (0.9.0), then the devices' table
    # (the datasheet's basis beside a reading: test_serving_by_hand's H100 PCIe and SXM5)
    assert table.splitlines()[3] == ("memory against: v100-sxm2-16gb the 16.9 GB CUDA reports, "
                                     "a100-sxm4-80gb the 85.1 GB CUDA reports, h100-sxm5-80gb the "
                                     "85 GB CUDA reports")
    # a training step without an optimizer says what its memory leaves out (0.9.0): 12 B a
    # parameter, 12 x 6,738,415,616 = 80.9 GB
    assert table.splitlines()[4] == ("memory: not counted: optimizer states (optimizer none: "
                                     "Adam's fp32 states would add 80.9 GB; give --optimizer "
                                     "adam)")
    assert table.splitlines()[6].split()[-2:] == ["memory", "fits"]
    assert "v100-sxm2-16gb " in table and "192 GB of 16.9 GB    no" in table
    page = comparison_html(c)
    assert "192 GB of the 85 GB CUDA reports" in page and "(7.48x), does not fit" in page
    out = invoke("compare", EXAMPLES / "hf" / "llama-2-7b.json", "--hw", "v100", "--hw", "a100",
                 "--hw", "h100", "--seq", "4096", "--batch", "8", "--format", "json").stdout
    assert [d["fits"] for d in json.loads(out)["devices"]] == [False, False, False]


def test_compare_names_the_fastest_device_that_holds_the_step():
    """At batch 2 the same step needs 26,953,662,464 (weights and gradients) + 163,829,514,240
    / 4 (activations, by the batch) + 10^9 = 68,911,041,024 B, 68.9 GB: the 80 GB A100 holds
    it, the L40S (47.8 GB as CUDA reports it) and the 40 GB A100 (42.3) do not. The L40S is the fastest (fp16 362 against
    312 TFLOP/s, 86% compute-bound) and says it cannot hold it; the verdict names the other
    that cannot and the fastest that can. A CPU entry states no capacity: not checked."""
    c = compare(EXAMPLES / "hf" / "llama-2-7b.json",
                ["a100-sxm4-80gb", "l40s", "a100-sxm4-40gb"], seq=4096, batch=2)
    data = comparison_dict(c)
    assert {d["memory_bytes"] for d in data["devices"]} == {68_911_041_024}
    assert [d["fits"] for d in data["devices"]] == [True, False, False]
    assert c.fastest.hardware.name == "l40s"
    assert c.fastest_fitting is c.baseline
    verdict = data["verdict"]
    assert verdict.startswith("l40s is the fastest (the step does not fit in its memory: needs "
                              "68.9 GB of the 47.8 GB CUDA reports): ")
    assert ("; the step does not fit in the memory of a100-sxm4-40gb; the fastest that holds "
            "it is a100-sxm4-80gb, at 1.21 s per step. Predicted") in verdict
    assert "l40s (does not fit) at" in verdict
    cpu = comparison_dict(compare(EXAMPLE, ["a100-sxm4-80gb", "xeon-platinum-8480plus"],
                                  batch=64))
    # mlp-1024-4096-1000 at batch 64, 2 B (fp16; bf16 on the Xeon): 1024 x 4096 + 4096 x 1000
    # = 8,290,304 weights and as many gradients, 33,161,216 B; the inputs each layer keeps,
    # 64 x (1024 + 4096) x 2 = 655,360, and the logits 64 x 1000 x 2 = 128,000: 33,944,576 B;
    # on the GPU also the 1 GB workspace. The Xeon states no capacity
    gpu, xeon = cpu["devices"]
    assert (gpu["fits"], xeon["fits"], xeon["capacity_bytes"]) == (True, None, None)
    assert (xeon["memory_bytes"], gpu["memory_bytes"]) == (33_944_576, 10**9 + 33_944_576)
    assert "does not fit" not in cpu["verdict"] and "hold" not in cpu["verdict"]


@pytest.mark.parametrize("hw, line", [
    # no SMs and no tiles: quantization_of is None for every GEMM, so "on" changed nothing
    ("8380", "quantization: on, no effect: xeon-platinum-8380 is a CPU: no tile/wave model (no "
             "SMs, no thread-block tiles)"),
    ("p100", "quantization: on, no effect: p100-pcie-16gb is a GPU before Volta: no tile/wave "
             "model (no Tensor Cores)"),
    ("v100", "quantization: on (compute-bound GEMM times divided by the tile/wave efficiency "
             "of the best candidate tile, after split-K where chosen)"),
])
def test_quantization_says_where_it_has_no_effect(invoke, hw, line):
    on, off = (invoke("gemm", 512, 512, 8192, "--hw", hw, "--dtype", "fp32", *flag)
               for flag in (("--quantization",), ()))
    assert on.exit_code == off.exit_code == 0
    assert on.stdout.splitlines()[3] == line
    if "no effect" in line:  # and indeed the table is the same
        assert on.stdout.splitlines()[4:] == off.stdout.splitlines()[3:]


def test_compare_names_the_device_quantization_leaves_alone(invoke):
    result = invoke("compare", EXAMPLE, "--hw", "v100", "--hw", "p100", "--quantization")
    assert result.exit_code == 0
    assert ("quantization: on (compute-bound GEMM times divided by the tile/wave efficiency); "
            "no effect on p100-pcie-16gb, a GPU before Volta: no tile/wave model (no Tensor "
            "Cores)") in result.stdout.splitlines()


def test_a_wide_comparison_draws_dots_not_bars_on_its_log_axis():
    # the MLP at batch 1024 in bf16: an H100 at 42.8 us against a Xeon 8180 (no bf16: fp32) at
    # 5.14 ms, 120x apart, past the linear chart's 20x: on a log axis a bar's length starts
    # wherever the axis does, so each device is a dot at its step time (the bars read 3.4x
    # ratios as lengths that said nothing)
    from roofline import compare
    from roofline.plot import plot_comparison

    ax = plot_comparison(compare(EXAMPLE, ["h100", "a100", "8180"], batch=1024, dtype="bf16"))
    assert ax.get_xscale() == "log"
    gids = {str(artist.get_gid()) for artist in ax.get_children()}
    assert "dots-step" in gids and not any(g.startswith("bars-") for g in gids)
    low, high = ax.get_ylim()
    assert low <= -0.5 and high >= 2.5  # every row's dot clear of the frame


def test_a_sweep_of_a_model_without_gemms_names_none_memory_bound():
    """An embedding and a norm, no GEMM: the sweep row's memory-bound GEMMs are ``none`` in
    the table and the HTML page alike (the table said ``all`` of its zero GEMMs, the page
    ``none``: one rule now, ``memory_bound_gemms``)."""
    from roofline.output.html.whatif import sweep_page
    from roofline.output.whatif_cells import memory_bound_gemms
    from roofline.output.whatif_sweep import sweep_table

    net = network_from_yaml("batch: 4\nseq: 16\ndtype: fp16\nmode: inference\nlayers:\n"
                            "  - {type: embedding, vocab: 1000, dim: 64}\n"
                            "  - {type: norm, dim: 64}\n")
    s = sweep(net, "h100", [1, 2])
    assert [memory_bound_gemms(r) for r in s.reports] == ["none", "none"]
    rows = [line.split() for line in sweep_table(s).splitlines()
            if line.startswith(("    1 ", "    2 "))]
    assert [row[-1] for row in rows] == ["none", "none"]
    assert ">all<" not in sweep_page(s)
