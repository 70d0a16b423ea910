"""plan works out what a part of a layout sets once for the layouts that share it (0.9.0,
``parallel.evaluate``'s ``cache``: a shard's facts and layer times, each stage's
``StageShape`` and times by the shard, sp, pp and vp and stages alike by their layers; the
data-parallel collectives by what they read; a stage's point-to-point transfers by which of its
boundaries cross nodes; ``Plan``'s layouts by GPU count): every layout it
evaluates is the one ``evaluate`` gives alone, field for field, and the caches live and die
with one plan, so that two plans in one process (other models, devices, fabrics) give what
each gives alone. Not a timing test (``benchmarks/bench_plan_search.py`` times the search and
checks its outputs byte for byte against an earlier version's)."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest

from roofline import plan
from roofline.analysis.parallel import evaluate
from roofline.analysis.parallel_result import StageCost
from roofline.analysis.plan import make_fabric, plan_layouts
from roofline.hardware.catalog import load_hardware
from roofline.model.network import load_network, network_from_yaml
from roofline.output.plan import plan_json

ROOT = Path(__file__).resolve().parents[1]
MIXTRAL = ROOT / "examples" / "hf" / "mixtral-8x7b.json"
LLAMA = ROOT / "examples" / "hf" / "llama-2-7b.json"


BLOCKS_ONLY = """
name: blocks-only
batch: 32
seq: 512
dtype: bf16
mode: train
optimizer: adam
recompute: full
layers:
  - {type: transformer, hidden: 512, heads: 8, ffn: 2048, gated: true, norm: rmsnorm,
     causal: true, repeat: 12, name: blk}
"""


def _mixtral():
    # Mixtral-8x7B (32 blocks of 8 experts): ep 1 and 2, pp 1..16 even and, over vp 1..4,
    # uneven chunks (pp 4 vp 3: 12 chunks of 32 blocks)
    return (load_network(MIXTRAL).with_overrides(batch=64, seq=1024, recompute="full",
                                                 optimizer="adam"),
            [16, 32], 64, 2, {"tp": [1, 2], "ep": [1, 2], "micro_batch": [1, 2],
                              "vp": [1, 2, 3, 4], "zero": [0, 1, 2, 3]})


def _blocks_only():
    # 12 blocks and nothing else: a pipeline's first, middle and last stages hold the same
    # layers, and only where a stage sits (the logits the last keeps, the transfers the first
    # and last do not make, which of its boundaries cross the nodes of 4 GPUs, the
    # micro-batches it keeps in flight: fewer than the stages with micro-batches of 16) sets
    # them apart
    return (network_from_yaml(BLOCKS_ONLY), [4, 8, 12], 48, 4,
            {"micro_batch": [1, 2, 4, 16], "vp": [1, 2, 3], "zero": [0, 1, 2, 3]})


@pytest.mark.parametrize("setup", [_mixtral, _blocks_only], ids=["mixtral", "blocks-only"])
def test_every_layout_of_a_search_is_the_layout_evaluated_alone(setup):
    # on nodes of 2 or 4 GPUs, so that some pipeline boundaries cross nodes and some do not;
    # every knob the caches key on varies (tp, ep, micro-batch, pp, vp, ZeRO stage, dp through
    # the GPU count), with full recomputation (what a stage keeps once): each layout of the
    # search, its stages shared with others and with its own alike, is the one ``evaluate``
    # works out alone, with no cache (each stage on its own), field for field, roof and
    # predicted
    network, gpus, batch, node, knobs = setup()
    h100 = load_hardware("h100")
    fabric = make_fabric(h100, gpus_per_node=node, intra="nvswitch-h100")
    search = plan_layouts(network, h100, gpus, batch, fabric, **knobs)
    assert len(search.results) > 150
    assert {r.layout.vp for r in search.results} == set(knobs["vp"])
    assert len({r.layout.pp for r in search.results}) >= 4
    for r in search.results:
        alone = evaluate(network, h100, r.layout, batch, fabric, search.reports[
            (r.layout.tp, r.layout.ep, r.layout.micro_batch)])
        assert alone == r, r.layout.label  # every stage's every field, roof and predicted
        assert alone.predicted_step_s == r.predicted_step_s


def _json(model: Path, hardware: str, gpus: str, **settings) -> str:
    return plan_json(plan(model, hardware, gpus, **settings))


MIXTRAL_PLAN = (MIXTRAL, "a100", "8..32", {"batch": 64, "seq": 4096, "ep": [1, 2]})
LLAMA_PLAN = (LLAMA, "h100", "8..64", {"batch": 128, "seq": 2048, "recompute": "full",
                                       "vp": [1, 2], "gpus_per_node": 4})


@pytest.mark.parametrize("first, second", [(MIXTRAL_PLAN, LLAMA_PLAN),
                                           (LLAMA_PLAN, MIXTRAL_PLAN)])
def test_two_plans_in_one_process_give_what_each_gives_alone(first, second):
    # each plan made again after another model's on another device and fabric is the same
    # JSON, byte for byte: nothing one search kept reaches the next
    model, hardware, gpus, settings = first
    before = _json(model, hardware, gpus, **settings)
    other = _json(second[0], second[1], second[2], **second[3])
    assert _json(model, hardware, gpus, **settings) == before
    assert other != before
    assert json.loads(before)["model"].startswith(model.stem)


def test_a_stage_cost_made_fast_is_the_dataclass_made_by_its_init():
    # StageCost.of skips the frozen dataclass's __init__ (a field at a time through
    # object.__setattr__): the same fields, equal, still frozen; given fewer values than
    # fields, the __init__ and its defaults (tp_grad_bytes 0)
    values = (1.0, 2.0, 0.5, 0.25, 0.0, 0.125, 0.01, 0.3, 2.0, 1000, {"weights": 2000}, 0.75,
              0.002, 4096)
    fast, plain = StageCost.of(*values), StageCost(*values)
    assert fast == plain and repr(fast) == repr(plain)
    assert [getattr(fast, f.name) for f in fields(StageCost)] == list(values)
    assert fast.microbatch_s == 1.0 + 2.0 + 0.25 + 0.0 + 0.125
    with pytest.raises(FrozenInstanceError):
        fast.forward_s = 3.0  # type: ignore[misc]
    short = StageCost.of(*values[:-1])
    assert short == StageCost(*values[:-1]) and short.tp_grad_bytes == 0
