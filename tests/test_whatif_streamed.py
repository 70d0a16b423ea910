"""compare's and sweep's JSON and CSV are written as they are made (0.9.0): the streamed text is
the text of the whole document as it was made before (``to_json`` of the dict with every GEMM
listed, built the old way here), valid JSON whose numbers are the library's, in pieces none of
which is the whole; what a listing keeps between its rows is bounded. And the sweep chart's
element id names a repeat's copies as runs, never one by one."""

from __future__ import annotations

import csv
import io
import json
import re
import tracemalloc

import pytest
from test_whatif_repeats import MODEL

from roofline.analysis.whatif import compare, sweep
from roofline.model.item_numbers import ItemNumbers
from roofline.model.network import network_from_yaml
from roofline.output import json as json_output
from roofline.output.json import Bounded, Members, json_chunks, to_json
from roofline.output.whatif import (
    comparison_csv,
    comparison_csv_chunks,
    comparison_dict,
    comparison_json,
)
from roofline.output.whatif_header import (
    compare_warnings,
    dtype_note,
    past_context_note,
    sweep_warnings,
)
from roofline.output.whatif_sweep import sweep_csv, sweep_csv_chunks, sweep_dict, sweep_json
from roofline.output.whatif_verdict import verdict_text
from roofline.output.whatif_why import why_texts

EXAMPLE = "examples/mlp-1024-4096-1000.yaml"

# Repeats of two kinds (a dense block and an MoE block, their copies apart), a layer whose name
# a CSV must quote, and a plain layer between: every path of the listings (runs, a run's
# copies, a copy's name, a quoted name).
MIXED = """name: mixed
batch: 4
seq: 256
dtype: fp16
mode: train
layers:
  - {type: embedding, vocab: 1000, dim: 128, name: emb}
  - {type: transformer, hidden: 128, heads: 2, ffn: 512, causal: true, repeat: 5, name: a}
  - {type: transformer, hidden: 128, heads: 2, ffn: 512, experts: 4, top_k: 2, causal: true,
     repeat: 3, name: moe}
  - {type: linear, in: 128, out: 128, name: "odd,name"}
  - {type: transformer, hidden: 128, heads: 2, ffn: 512, causal: true, repeat: 4, name: b}
  - {type: linear, in: 128, out: 1000, name: head}
"""

#: tests/test_whatif_repeats.py's block, repeated ``%d`` times: 12 N + 3 GEMMs, the 4 forward
#: ones of copy c MM4c+1 .. MM4c+4, the head's 3 after them, then 8 backward ones a copy.
REPEATED = MODEL


def _old_comparison_dict(c) -> dict:
    """The compare JSON's dict as ``output.whatif`` built it before 0.9.0's streaming: every
    GEMM's row from ``Comparison.to_dict``, its why from ``why_texts`` by index."""
    data = c.to_dict()
    for device, report in zip(data["devices"], c.reports):
        device["dtype_note"] = dtype_note(c, report)
    whys = {r.hardware.name: why_texts(c, r) for r in c.reports[1:]}
    for index, row in enumerate(data["gemms"]):
        row["why"] = {name: texts[index][1] for name, texts in whys.items()}
    data["verdict"] = verdict_text(c)
    data["warnings"] = list(compare_warnings(c))
    return data


def _old_sweep_dict(s) -> dict:
    return s.to_dict() | {"warnings": [*past_context_note(s), *sweep_warnings(s)]}


def _comparisons():
    mixed = network_from_yaml(MIXED)
    return [compare(EXAMPLE, ["v100", "a100", "xeon-platinum-8480plus"], batch=64),
            compare(mixed, ["h100", "xeon-platinum-8380"], quantization=True),
            compare(mixed, ["h100", "a100"], mode="inference", tp=2),
            # over a pipeline (0.9.0): each device's pipeline_parallel, a top-level pp
            compare(mixed, ["h100", "a100"], mode="inference", tp=2, pp=2),
            compare(mixed, ["a100", "h100"], prompt=32, generate=4, batch=2)]


def _sweeps():
    mixed = network_from_yaml(MIXED)
    return [sweep(EXAMPLE, "v100", "1..1024", mode="inference"),
            sweep(mixed, "t4", "1..512"),
            sweep(mixed, "t4", "1,4,16", seqs="32,256,2048"),  # a grid: transitions by seq
            sweep(mixed, "h100", 8, seqs="64..4096", mode="inference"),
            sweep(mixed, "h100", "1,8", prompt=64, generate=8),
            sweep(mixed, "h100", "1,8", mode="inference", pp=2)]


@pytest.fixture(scope="module")
def comparisons():
    return _comparisons()


@pytest.fixture(scope="module")
def sweeps():
    return _sweeps()


def test_the_streamed_compare_json_is_the_old_document(comparisons):
    for c in comparisons:
        old = _old_comparison_dict(c)
        streamed = "".join(comparison_json(c))
        assert streamed == to_json(old) + "\n"
        assert json.loads(streamed) == old  # valid JSON, every float read back as it was
        assert comparison_dict(c) == old


def test_the_streamed_sweep_json_is_the_old_document(sweeps):
    for s in sweeps:
        old = _old_sweep_dict(s)
        streamed = "".join(sweep_json(s))
        assert streamed == to_json(old) + "\n"
        assert json.loads(streamed) == old
        assert sweep_dict(s) == old
    grid = sweeps[2]
    assert json.loads("".join(sweep_json(grid)))["transitions_by_seq"] is not None
    assert json.loads("".join(sweep_json(sweeps[3])))["seq_transitions"]


def test_the_csv_rows_are_the_json_figures(comparisons, sweeps):
    """Each CSV row carries its GEMM's figures as the JSON has them (the same float, written
    as Python writes it), a name that holds a comma quoted."""
    for c in comparisons:
        data = json.loads("".join(comparison_json(c)))
        rows = list(csv.DictReader(io.StringIO(comparison_csv(c))))
        assert len(rows) == len(data["gemms"]) * len(c.reports)
        for i, row in enumerate(rows):
            gemm = data["gemms"][i // len(c.reports)]
            hw = row["hardware"]
            assert (row["name"], row["layer"], row["pass"]) == (gemm["name"], gemm["layer"],
                                                               gemm["pass"])
            assert row["time_s"] == repr(gemm["time_s"][hw])
            assert row["speedup"] == repr(gemm["speedup"][hw])
            assert row["why"] == gemm.get("why", {}).get(hw, "")
    names = {row["layer"] for row in csv.DictReader(io.StringIO(comparison_csv(comparisons[1])))}
    assert "odd,name" in names
    for s in sweeps:
        data = json.loads("".join(sweep_json(s)))
        rows = iter(csv.DictReader(io.StringIO(sweep_csv(s))))
        for point in data["points"]:
            for gemm in point["gemms"]:
                row = next(rows)
                assert row["name"] == gemm["name"]
                assert row["time_s"] == repr(gemm["time_s"])
                assert row["intensity"] == repr(gemm["intensity"])
        assert next(rows, None) is None


def test_run_values_are_named_rows_without_the_names():
    """A run's copies repeat its row, in numbering order: 10 copies of 12 GEMMs between the
    embedding's none and the head's 3."""
    from roofline.model.item_numbers import named_rows, run_values, template_values

    results = sweep(network_from_yaml(REPEATED % 10), "h100", "8").reports[0].results
    rows = template_values([results], lambda at: at[0].gemm.m)
    values = list(run_values(results, rows))
    assert values == [v for _, v in named_rows(results, rows)]
    assert len(values) == 12 * 10 + 3


def test_a_bounded_cache_emptied_often_writes_the_same(monkeypatch, comparisons, sweeps):
    """With room for two rows' tails the listings re-make what they forgot: the same text."""
    texts = [(comparison_json, c) for c in comparisons[:2]] + [
        (comparison_csv_chunks, c) for c in comparisons[:2]] + [
        (sweep_json, s) for s in sweeps[1:3]] + [(sweep_csv_chunks, s) for s in sweeps[1:3]]
    whole = ["".join(make(x)) for make, x in texts]
    monkeypatch.setattr(json_output, "KEPT", 2)
    assert ["".join(make(x)) for make, x in texts] == whole
    cache = Bounded()
    for i in range(5):
        cache.keep(i, i)
        assert len(cache) <= 2


def test_lazy_values_write_what_their_dict_would():
    eager = {"a": 1, "rows": [{"x": 1.5, "y": [1, 2]}, {"x": None, "s": "é\n"}],
             "by_name": {"MM1": 3, "MM2": None}, "nested": [{"g": [{"n": "a", "v": 0.1}]}],
             "none": [], "empty": {}, "flag": True, "plain": [1, 2]}
    lazy = {"a": 1, "rows": iter([{"x": 1.5, "y": iter([1, 2])}, {"x": None, "s": "é\n"}]),
            "by_name": Members(iter([("MM1", 3), ("MM2", None)])),
            "nested": [{"g": iter([({"n": "a"}, {"v": 0.1})])}],
            "none": iter([]), "empty": Members(()), "flag": True, "plain": [1, 2]}
    assert "".join(json_chunks(lazy)) == to_json(eager) + "\n"
    assert "".join(json_chunks(eager)) == to_json(eager) + "\n"


def test_a_lazy_document_fails_on_a_non_finite_header_before_any_piece():
    pieces = json_chunks({"rows": iter([{"x": 1}]), "bad": float("inf")})
    with pytest.raises(Exception, match="not finite"):
        next(pieces)


def test_the_cli_writes_pieces_never_the_whole(invoke, tmp_path, monkeypatch):
    """compare and sweep hand stdout their JSON and CSV a row (or less) at a time: the largest
    piece a writer receives is a row's, whatever the document's size."""
    from roofline.cli import console

    model = tmp_path / "r.yaml"
    model.write_text(REPEATED % 300)
    pieces: list[int] = []
    real = console._Chunked.write

    def write(self, text):
        pieces.append(len(text))
        real(self, text)

    monkeypatch.setattr(console._Chunked, "write", write)
    for args in (["compare", model, "--hw", "h100", "--hw", "a100", "--hw", "l4"],
                 ["sweep", model, "--hw", "h100", "--batch", "1..64"]):
        for fmt in ("json", "csv"):
            pieces.clear()
            result = invoke(*args, "--format", fmt)
            assert result.exit_code == 0
            assert len(result.stdout) == sum(pieces) > 2**20  # every byte came in pieces
            assert max(pieces) < 2**12  # a row's, a few hundred bytes; never the document


def test_streaming_holds_a_fraction_of_the_document():
    """Memory allocated while a 300-block model's listings (2 to 4 MB each) are read piece
    by piece: what a row needs and the bounded caches (about 0.2 MB), not the document or a
    dict per row (10**4 blocks had held 570 to 630 MiB)."""
    network = network_from_yaml(REPEATED % 300)
    s, c = sweep(network, "h100", "1..64"), compare(network, ["h100", "a100", "l4"])
    for make, result in ((sweep_json, s), (sweep_csv_chunks, s), (comparison_json, c),
                         (comparison_csv_chunks, c)):
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            size = sum(len(piece) for piece in make(result))
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        assert size > 3 * 2**19, make
        assert peak < 2**19, make  # under 0.5 MiB: a third of the smallest document


# ------------------------------------------------------------------------- the sweep chart's id

def test_spelled_numbers_by_hand():
    numbers = ItemNumbers("MM")
    numbers.add(1, 4, 1, (0, 4))  # one copy: MM1, MM5, as named
    numbers.add(10, 4, 3, (1, 2))  # three copies of 4: MM11, MM15, MM19 and MM12, MM16, MM20
    numbers.add(30, 1, 5, (0,))  # five copies of one item: MM30 .. MM34
    assert numbers.spelled() == "MM1,MM5,MM11-MM19/4,MM12-MM20/4,MM30-MM34"


def _expanded(spelled: str) -> list[int]:
    """Every number a spelled gid names (``MMa-MMb/p``: a, a + p, ..., b)."""
    out = []
    for piece in spelled.split(","):
        m = re.fullmatch(r"MM(\d+)(?:-MM(\d+)(?:/(\d+))?)?", piece)
        assert m, piece
        low, high, step = int(m[1]), int(m[2] or m[1]), int(m[3] or 1)
        assert (high - low) % step == 0
        out += range(low, high + 1, step)
    return out


def test_the_sweep_charts_id_names_a_repeats_copies_as_runs():
    """10 copies of the block (123 GEMMs): the forward qkv GEMMs of every copy, MM1, MM5, ...,
    MM37 (4 forward GEMMs a copy), are one run in the id; every GEMM is named by exactly one
    curve's id, and no id grows with the copies (the same ids' lengths at 10 and 1,000)."""
    pytest.importorskip("matplotlib")
    from roofline.plot import plot_batch_sweep

    def ids(copies: int) -> list[str]:
        s = sweep(network_from_yaml(REPEATED % copies), "h100", "1..64")
        ax = plot_batch_sweep(list(s.reports))
        return [str(line.get_gid())[len("sweep:"):] for line in ax.lines
                if str(line.get_gid()).startswith("sweep:")]

    small = ids(10)
    assert any(gid.startswith("MM1-MM37/4,") or gid == "MM1-MM37/4" for gid in small)
    numbers = sorted(n for gid in small for n in _expanded(gid))
    assert numbers == list(range(1, 12 * 10 + 3 + 1))  # each of the 123 GEMMs once
    large = ids(1000)
    assert max(map(len, large)) < 2 * max(map(len, small))
    assert sorted(n for gid in large for n in _expanded(gid)) == list(range(1, 12_003 + 1))
