"""A sweep is bounded in time (issue 25, class 8): 5,000 listed batches used to take a minute,
most of it searching each GEMM's nearest better shape, which a sweep never shows; a sweep
that would take minutes is refused in one line before the work."""

from __future__ import annotations

import pytest

from roofline.analysis import quantization, whatif
from roofline.analysis.whatif import sweep
from roofline.analysis.whatif_limits import MAX_SWEEP_GRID, MAX_SWEEP_ITEMS
from roofline.errors import InputError

MLP = "examples/mlp-1024-4096-1000.yaml"


def test_the_caps_are_the_stated_ones():
    assert (MAX_SWEEP_GRID, MAX_SWEEP_ITEMS) == (10_000, 1_000_000)


def test_a_sweep_never_searches_the_nearest_better_shape(monkeypatch):
    def search(*args):
        raise AssertionError("a sweep does not show the nearest better shape")

    monkeypatch.setattr(quantization, "_nearest_better", search)
    result = sweep(MLP, "a100", list(range(1, 41)))
    assert len(result.reports) == 40
    assert "nearest_better_shape" not in str(result.to_dict())
    # read when asked for: the same shape's search runs then
    q = next(r.quantization for report in result.reports for r in report.results
             if r.quantization and r.quantization.effective < quantization.GOOD_EFFICIENCY)
    with pytest.raises(AssertionError, match="does not show"):
        q.better  # noqa: B018


def test_more_points_than_the_cap_are_refused_before_any_analysis(monkeypatch):
    monkeypatch.setattr(whatif, "analyze", lambda *a, **k: pytest.fail("analyzed"))
    with pytest.raises(InputError, match=r"10,001 points \(10,001 batches\) are more than the "
                                         r"10,000 a sweep analyzes"):
        sweep(MLP, "a100", list(range(1, 10_002)))
    # a grid counts batches x seqs: 101 x 100 = 10,100
    with pytest.raises(InputError, match=r"10,100 points \(101 batches x 100 seqs\)"):
        sweep("examples/hf/llama-2-7b.json", "a100", list(range(1, 102)),
              seqs=list(range(1, 101)))


def test_a_model_with_many_gemms_is_capped_by_the_analyses(tmp_path, monkeypatch):
    # 100 linear layers trained: 3 x 100 - 1 = 299 GEMMs, no ops; 3,345 batches x 299 =
    # 1,000,155 analyses > 1,000,000 (3,344 x 299 = 999,856 would pass); refused after the
    # first
    model = tmp_path / "deep.yaml"
    model.write_text("batch: 8\ndtype: fp16\nmode: train\nmlp: [" + ", ".join(["64"] * 101)
                     + "]\n")
    calls = []
    real = whatif.analyze
    monkeypatch.setattr(whatif, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.raises(InputError, match=r"3,345 points of 299 GEMMs and ops each are "
                                         r"1,000,155 analyses, more than the 1,000,000 a sweep "
                                         r"does \(about 3,344 points of this model\)"):
        sweep(model, "a100", list(range(1, 3346)))
    assert len(calls) == 1


def test_the_cli_refuses_in_one_line(invoke):
    res = invoke("sweep", MLP, "--hw", "a100", "--batch", ",".join(map(str, range(1, 10_002))))
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        "Error: --batch: 10,001 points (10,001 batches) are more than the 10,000 a sweep "
        "analyzes (each point is a whole analysis); give fewer values, or a range a..b (a, "
        "the powers of two between, b)"]


def test_a_repeat_counts_once_in_the_analyses(tmp_path, monkeypatch):
    """The analyses cap counts a repeat's copies once (0.9.0: a step is analyzed run by run).
    100 plain 64 -> 64 layers trained: 100 forward GEMMs and 2 x 100 - 1 = 199 backward (the
    first has no data gradient), 299; then ``repeat: 1000`` of the same layer: its forward run
    (1 GEMM a copy) and its backward run (2 a copy: every copy has layers before it), 3 once:
    302 a step, though the step has 299 + 3 x 1,000 = 3,299 GEMMs. 3,312 x 302 = 1,000,224 >
    1,000,000 is refused after the first point; 3,311 x 302 = 999,922 would pass (before, 4
    points of 3,299 were already past any point count of 304 or more)."""
    model = tmp_path / "deep.yaml"
    model.write_text("batch: 8\ndtype: fp16\nmode: train\nlayers:\n"
                     + "".join(f"  - {{type: linear, in: 64, out: 64, name: f{i}}}\n"
                               for i in range(100))
                     + "  - {type: linear, in: 64, out: 64, repeat: 1000, name: r}\n")
    calls = []
    real = whatif.analyze
    monkeypatch.setattr(whatif, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.raises(InputError, match=r"3,312 points of 302 GEMMs and ops each \(a repeated "
                                         r"layer's copies counted once\) are 1,000,224 "
                                         r"analyses, more than the 1,000,000 a sweep does "
                                         r"\(about 3,311 points of this model\)"):
        sweep(model, "a100", list(range(1, 3313)))
    assert len(calls) == 1
    assert len(sweep(model, "a100", list(range(1, 305))).reports) == 304


def test_json_and_csv_are_capped_by_the_rows_they_list(tmp_path):
    """A sweep's text names a repeat's copies as runs; its JSON and CSV list every GEMM at every
    point: 10**6 copies of a 8 -> 8 layer at inference are 10**6 GEMMs a point, and the 3
    points of 1..3 (1, 2, 3) 3,000,000 rows > MAX_SWEEP_LISTED (1,000,000), refused in one
    line before anything is written (the library names the format as its keyword)."""
    from roofline.analysis.whatif_limits import MAX_SWEEP_LISTED, check_listed_sweep
    from roofline.errors import RooflineError
    from roofline.output.whatif_sweep import sweep_csv, sweep_dict, sweep_table

    assert MAX_SWEEP_LISTED == 1_000_000
    model = tmp_path / "wide.yaml"
    model.write_text("batch: 8\ndtype: fp16\nmode: inference\nlayers:\n"
                     "  - {type: linear, in: 8, out: 8, repeat: 1000000}\n")
    result = sweep(model, "a100", "1..3")
    assert "  never: MM1-MM1000000" in sweep_table(result)
    for render, fmt in ((sweep_csv, "csv"), (sweep_dict, "json")):
        with pytest.raises(RooflineError, match=rf"3 points of 1,000,000 GEMMs each are "
                                                rf"3,000,000 rows; format='{fmt}' lists "
                                                rf"every GEMM at every point and is capped "
                                                rf"at 1,000,000"):
            render(result)
    check_listed_sweep(sweep(model, "a100", "1"), "csv")  # 1,000,000 rows: at the cap, listed
