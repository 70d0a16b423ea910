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
