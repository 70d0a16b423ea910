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
