"""plan's --format csv: a row per fitting layout per GPU count whose every figure is the JSON's
(read back as the same float), ranked and flagged as the JSON lists them; the step's relations
checked on each row by hand; a model without a sequence counting samples; --top; a hostile
layer name quoted; the CLI's stdout pure CSV, what it leaves out said on stderr."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from roofline import plan
from roofline.output.plan import PLAN_FORMATS, plan_json
from roofline.output.plan_csv import KNOBS, MEMORY, PARTS, csv_header, csv_notes, plan_csv

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
MIXTRAL = ROOT / "examples" / "hf" / "mixtral-8x7b.json"


@pytest.fixture(scope="module")
def mixtral():
    """8 A100s hold none of its layouts (94.4 GB a GPU before activations); 16 and 32 do."""
    return plan(MIXTRAL, "a100", "8..32", batch=64, seq=4096)


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_every_figure_is_the_jsons(mixtral):
    """Row for row the JSON's layouts (every fitting one, count by count, fastest predicted
    first): each number reads back to the JSON's own float or int, each flag and word is the
    JSON's, rank is the place in its count's list and front says whether the JSON's front
    holds it."""
    data = json.loads(plan_json(mixtral))
    rows = _rows(plan_csv(mixtral))
    layouts = [(c["gpus"], rank, lay) for c in data["counts"]
               for rank, lay in enumerate(c["layouts"], 1)]
    assert len(rows) == len(layouts) == sum(c["fitting"] for c in data["counts"]) == 84
    front = [(lay["gpus"], lay["predicted_step_s"], lay["step_s"]) for lay in data["front"]]
    flagged = []
    for row, (gpus, rank, lay) in zip(rows, layouts):
        assert (row["hardware"], int(row["batch"]), int(row["seq"])) == (
            data["hardware"], data["batch"], data["seq"])
        for key in KNOBS:
            want = lay[key]
            assert row[key] == (str(want) if isinstance(want, bool) else str(int(want))), key
        assert int(row["gpus"]) == gpus and int(row["rank"]) == rank
        for csv_key, value in [("predicted_step_s", lay["predicted_step_s"]),
                               ("predicted_tokens_per_s", lay["predicted_tokens_per_s"]),
                               ("predicted_recompute_s", lay["predicted_recompute_s"]),
                               ("step_s", lay["step_s"]),
                               ("step_no_overlap_s", lay["step_no_overlap_s"]),
                               ("tokens_per_s", lay["tokens_per_s"]),
                               ("tokens_per_s_per_gpu", lay["tokens_per_s_per_gpu"]),
                               ("recompute_s", lay["recompute_s"]),
                               ("bubble_fraction", lay["bubble_fraction"]),
                               *((f"predicted_{p}", lay["predicted_parts"][p]) for p in PARTS),
                               *((p, lay["parts"][p]) for p in PARTS)]:
            assert float(row[csv_key]) == value, csv_key
        memory = lay["memory"]
        assert [int(row[f"memory_{p}_bytes"]) for p in MEMORY] == [memory[p] for p in MEMORY]
        assert int(row["memory_total_bytes"]) == memory["total_bytes"]
        assert int(row["memory_capacity_bytes"]) == memory["capacity_bytes"]
        assert int(row["tp_allreduce_bytes"]) == lay["tp_allreduce_bytes"]
        assert row["fits"] == str(memory["fits"]) == "True"
        assert (row["predicted_bound"], row["bound"]) == (lay["predicted_bound"], lay["bound"])
        assert row["stage_blocks"] == "; ".join(map(str, lay["stage_blocks"]))
        assert row["replicated_layers"] == "; ".join(lay["replicated_layers"])
        assert row["front"] in ("True", "False")
        if row["front"] == "True":
            flagged.append((gpus, lay["predicted_step_s"], lay["step_s"]))
            assert rank == 1  # the front holds a count's best only
    assert flagged == front and len(front) == 2


def test_the_columns_are_the_jsons_keys(mixtral):
    """The parts and the memory parts the header names are the JSON's, in its order; the
    throughput's unit is the model's."""
    lay = json.loads(plan_json(mixtral))["front"][0]
    assert list(PARTS) == list(lay["parts"]) == list(lay["predicted_parts"])
    assert [*MEMORY, "total_bytes", "capacity_bytes", "fits"] == list(lay["memory"])
    assert set(KNOBS) <= set(lay)
    header = csv_header(mixtral)
    assert header[:3] == ["hardware", "batch", "seq"] and len(set(header)) == len(header)
    assert "predicted_tokens_per_s" in header and "samples_per_s" not in header
    assert plan_csv(mixtral).splitlines()[0] == ",".join(header)


def test_each_row_holds_the_steps_relations_by_hand(mixtral):
    """On every row, worked from its own cells: the parts add up to the step, the overlapped
    data-parallel time aside (step = compute + tp + ep + p2p + bubble + dp exposed +
    optimizer); throughput is batch x seq / step (64 x 4096 = 262,144 tokens a step), per GPU
    over the GPUs; the GPUs are tp x pp x dp; the memory parts add up to the total, within the
    capacity."""
    for row in _rows(plan_csv(mixtral)):
        for prefix in ("predicted_", ""):
            parts = sum(float(row[f"{prefix}{p}"]) for p in PARTS
                        if p != "dp_comm_overlapped_s")
            assert parts == pytest.approx(float(row[f"{prefix}step_s"]), rel=1e-12)
            assert float(row[f"{prefix}tokens_per_s"]) == pytest.approx(
                262_144 / float(row[f"{prefix}step_s"]), rel=1e-12)
        assert float(row["tokens_per_s_per_gpu"]) == pytest.approx(
            float(row["tokens_per_s"]) / int(row["gpus"]), rel=1e-12)
        assert int(row["tp"]) * int(row["pp"]) * int(row["dp"]) == int(row["gpus"])
        total = sum(int(row[f"memory_{p}_bytes"]) for p in MEMORY)
        assert total == int(row["memory_total_bytes"]) <= int(row["memory_capacity_bytes"])


def test_a_model_without_a_sequence_counts_samples_and_top_cuts_each_count():
    """The MLP (no sequence): the seq cell is empty and the throughput columns count samples
    (64 a step: samples_per_s = 64 / step_s). With top 2, each count keeps its 2 fastest,
    the JSON's at top 2 row for row; the notes say how many fitting layouts were left out."""
    planned = plan(MLP, "h100", "1..4", batch=64)
    header = csv_header(planned)
    assert {"predicted_samples_per_s", "samples_per_s", "samples_per_s_per_gpu"} <= set(header)
    assert not any("tokens" in name for name in header)
    rows = _rows(plan_csv(planned))
    assert len(rows) == len(planned.fitting) == 45 and {r["seq"] for r in rows} == {""}
    for row in rows:
        assert float(row["samples_per_s"]) == pytest.approx(64 / float(row["step_s"]),
                                                            rel=1e-12)
    top = _rows(plan_csv(planned, 2))
    data = json.loads(plan_json(planned, 2))
    assert [(int(r["gpus"]), int(r["rank"]), float(r["predicted_step_s"])) for r in top] == [
        (c["gpus"], rank, lay["predicted_step_s"]) for c in data["counts"]
        for rank, lay in enumerate(c["layouts"], 1)]
    assert len(top) == 6
    assert csv_notes(planned, 2) == ["left out of the csv: 39 fitting layouts past --top 2 "
                                     "(every one without --top)"]
    assert csv_notes(planned) == []


def test_a_hostile_layer_name_is_quoted(tmp_path):
    """A linear layer that is not the logits runs whole on every tensor-parallel GPU: its name,
    holding a comma, a quote and a semicolon, is quoted in the replicated_layers cell and reads
    back whole."""
    hostile = 'proj,"x"; y'
    model = tmp_path / "model.yaml"
    model.write_text("name: hostile\nbatch: 8\nseq: 128\ndtype: bf16\nmode: train\nlayers:\n"
                     "  - {type: transformer, hidden: 256, heads: 4, ffn: 1024, name: blk}\n"
                     f"  - {{type: linear, in: 256, out: 256, name: '{hostile}'}}\n")
    planned = plan(model, "h100", "2", batch=8, tp=[2])
    text = plan_csv(planned)
    assert '"proj,""x""; y"' in text
    rows = _rows(text)
    assert rows and all(r["replicated_layers"] == hostile and r["tp"] == "2" for r in rows)


def test_the_cli_writes_csv_on_stdout_and_what_it_leaves_out_on_stderr(invoke, mixtral):
    res = invoke("plan", MIXTRAL, "--hw", "a100", "--gpus", "8..32", "--batch", "64", "--seq",
                 "4096", "--format", "csv")
    assert res.exit_code == 0, res.output
    assert res.stdout == plan_csv(mixtral)
    assert ("no csv row for 8 GPUs: none of 106 layouts fits (the smallest needs 99.2 GB; "
            "without activations, at least 94.4 GB)") in res.stderr
    top = invoke("plan", MIXTRAL, "--hw", "a100", "--gpus", "8..32", "--batch", "64", "--seq",
                 "4096", "--format", "csv", "--top", "1")
    assert top.exit_code == 0 and top.stdout == plan_csv(mixtral, 1)
    assert len(_rows(top.stdout)) == 2
    assert "left out of the csv: 82 fitting layouts past --top 1" in top.stderr
    refused = invoke("plan", MLP, "--hw", "h100", "--gpus", "1", "--format", "csv", "--gemms")
    assert refused.exit_code == 2 and "--format table" in refused.output
    assert PLAN_FORMATS["csv"](mixtral) == plan_csv(mixtral)
