"""Sparse inputs (input_nnz) and sampled outputs (active_out) of a linear layer: FLOPs and bytes
of a sparse-times-dense product, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analysis.report import analyze
from roofline.errors import InputError
from roofline.hardware.catalog import load_hardware
from roofline.model.network import load_network, network_from_yaml

EXAMPLES = Path(__file__).parent.parent / "examples"


def _net(layers: str, batch: int = 4, mode: str = "train"):
    return network_from_yaml(f"batch: {batch}\ndtype: fp32\nmode: {mode}\nlayers:\n{layers}")


def test_sparse_input_flops_and_bytes():
    # batch 4, in 1000, out 16, 10 nonzeros per sample, fp32 (e = 4), int32 indices:
    # FLOPs 2 x batch x nnz x out = 2 x 4 x 10 x 16 = 1280
    # bytes: nonzeros 4 x 10 x (4 + 4) = 320; touched weights min(4 x 10 x 16, 16000) = 640
    #        elements x 4 = 2560; Y 4 x 16 x 4 = 256; no output ids  -> 3136
    net = _net("  - {type: linear, in: 1000, out: 16, input_nnz: 10}\n", mode="inference")
    assert net.gemms() == ()
    (op,) = net.ops()
    assert (op.kind, op.flops, op.bytes) == ("sparse-linear", 1280, 3136)
    assert net.input_bytes() == 320


def test_sampled_outputs_scale_the_flops_and_read_their_ids():
    # dense input 8, out 1000, 50 active per sample, batch 4:
    # FLOPs 2 x 4 x 8 x 50 = 3200; X 4 x 8 x 4 = 128; touched weights min(4 x 8 x 50 = 1600,
    # 8000) x 4 = 6400; Y 4 x 50 x 4 = 800; ids 4 x 50 x 4 = 800 -> 8128
    net = _net("  - {type: linear, in: 8, out: 8}\n"
               "  - {type: linear, in: 8, out: 1000, active_out: 50, name: out}\n")
    ops = [o for o in net.ops() if o.layer == "out"]
    assert [(o.kind, o.flops, o.bytes) for o in ops] == [
        ("sparse-linear", 3200, 8128),
        # dX (an earlier layer has weights): dY 800 + ids 800 + weights 6400 + dX 128
        ("sparse-linear-backward-data", 3200, 8128),
        # dW: X 128 + dY 800 + ids 800 + touched weight gradient 6400
        ("sparse-linear-backward-weight", 3200, 8128)]


def test_touched_weights_are_at_most_the_whole_matrix():
    # batch 100 x 10 nonzeros x 16 outputs = 16000 > in x out = 50 x 16 = 800 elements
    net = _net("  - {type: linear, in: 50, out: 16, input_nnz: 10}\n", batch=100,
               mode="inference")
    (op,) = net.ops()
    # 100 x 10 x 8 + 800 x 4 + 100 x 16 x 4
    assert op.bytes == 8000 + 3200 + 6400


@pytest.mark.parametrize("layer, message", [
    ("{type: linear, in: 10, out: 4, input_nnz: 11}", "input_nnz: 11 is more than in (10)"),
    ("{type: linear, in: 10, out: 4, active_out: 0}", "active_out: expected a positive integer"),
])
def test_bad_sparse_fields(layer, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _net(f"  - {layer}\n")


def test_slide_sparse_step_on_a_xeon_beats_the_dense_one_on_a_v100():
    sparse, dense = (load_network(EXAMPLES / f"slide-amazon-670k{s}.yaml") for s in ("", "-dense"))
    # hidden: 2 x 256 x 75 x 128 = 4,915,200 FLOPs per pass; output: 2 x 256 x 128 x 3350
    assert [o.flops for o in sparse.ops() if o.kind == "sparse-linear"] == [4_915_200,
                                                                             219_545_600]
    xeon = analyze(sparse, load_hardware("xeon-platinum-8180")).totals["time_s"]
    v100 = analyze(dense, load_hardware("v100-sxm2-32gb")).totals["time_s"]
    assert xeon < v100  # the shape of SLIDE's finding: fewer FLOPs beat a faster device
