"""The probe records notes as codes and values (probe.result.Note); output/probe_notes.py holds
their sentences. Every note the probe can make has a sentence, with exactly the fields it
gives."""

from __future__ import annotations

import ast
import string
from pathlib import Path

from roofline.output.probe_notes import TEXT, note_text
from roofline.probe.result import Note

PROBE = Path(__file__).parent.parent / "src" / "roofline" / "probe"


def _notes_made_in_the_probe():
    for path in sorted(PROBE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Note":
                code = node.args[0]
                assert isinstance(code, ast.Constant), f"{path.name}: a Note's code is a literal"
                keys = set()
                if len(node.args) > 1:
                    assert isinstance(node.args[1], ast.Dict), f"{path.name}: values as a dict"
                    keys = {k.value for k in node.args[1].keys if isinstance(k, ast.Constant)}
                yield path.name, code.value, keys


def test_every_note_has_a_sentence_with_exactly_its_fields():
    made = list(_notes_made_in_the_probe())
    assert len(made) > 20
    for where, code, keys in made:
        assert code in TEXT, f"{where}: no sentence for note {code!r}"
        fields = {name for _, name, _, _ in string.Formatter().parse(TEXT[code]) if name}
        # a duration (best_s) is written as seconds() writes it, under its name less _s
        fields = {f"{name}_s" if f"{name}_s" in keys else name for name in fields}
        assert fields == keys, f"{where}: note {code!r} gives {keys}, its sentence uses {fields}"
    assert {code for _, code, _ in made} == set(TEXT), "sentences no note uses"


def test_a_sentence_reads_as_before():
    # the texts the probe JSON carried before its notes became data, word for word
    note = Note("llc_like_dram", {"rate": 41.234})
    assert note_text(note) == ("cache-resident rate 41.2 GB/s is within 20% of DRAM (shared or "
                               "virtualised cache?): not reported")
    note = Note("clock_raised", {"dtype": "fp32", "rate": 1234.5, "computed": 1000.0,
                                 "unit": "vector", "old": 2.1, "new": 2.59})
    assert note_text(note) == ("measured fp32 1,234.5 GFLOP/s exceeds the computed 1,000.0: the "
                               "vector clock is raised from 2.10 to the 2.59 GHz it implies (the "
                               "cores ran faster than assumed, or have more or wider units)")


def test_fp32_gemms_far_below_fp64s_share_warn():
    """The development VM's two torch probes, by hand: stalled, fp32 87.7 of 203.5 GFLOP/s
    (43.1%) against fp64 78.5 of 101.8 (77.1%): 43.1 < 0.7 x 77.1 = 54.0, a warning; in the
    active regime 174.3 of 204.7 (85.1%) against 82.1 of 102.4 (80.2%): none."""
    from roofline.probe.runner import share_gap

    ceilings = {"fp32": 203.5, "fp64": 101.8}
    [note] = share_gap({"fp32": 87.7, "fp64": 78.5}, ceilings, "torch")
    assert note_text(note) == (
        "fp32 GEMMs through torch reached 43% of their computed peak against fp64's 77% on the "
        "same units: the fp32 run was disturbed (a busy machine, or OpenMP threads waking a "
        "halted vCPU: try OMP_WAIT_POLICY=ACTIVE, and run the workload the same way); times "
        "predicted from it come out too long")
    assert share_gap({"fp32": 174.3, "fp64": 82.1}, {"fp32": 204.7, "fp64": 102.4},
                     "torch") == []
    assert share_gap({"fp32": 87.7}, ceilings, "numpy") == []  # fp64 not timed
    assert share_gap({"fp32": 87.7, "fp64": 78.5}, {}, "numpy") == []  # no ceilings


def test_an_unstable_note_names_the_check_that_fired():
    # pyperf's two checks: the spread past 10%, or the worst value 50% off the best; a note
    # fired by the second cited "spread (MAD/median) 0%" as its cause
    from roofline.kernels.timing import BenchResult
    from roofline.probe.runner import instability_note

    values = [6.14e-05] + [7.98e-03] * 9 + [8.1e-03]
    note = instability_note("torch permuted copy", BenchResult(tuple(values), (), 1))
    assert note_text(note).startswith(
        "torch permuted copy may be unstable: its worst value took 132x its best (best 61.4 us, "
        "median 7.98 ms, worst 8.1 ms per call over 11 values; spread (MAD/median) 0%);")
    spread = instability_note("torch add", BenchResult((1.0, 1.3, 1.0, 1.3, 1.15), (), 1))
    assert note_text(spread).startswith("torch add may be unstable: spread (MAD/median) 13%")
