"""A captured module's step is what it ran: settings given after the capture that it cannot
take (another mode or attention form, a seq, a phase) are refused in one line naming the
capture to make, not applied in part. Until 0.9.0 an inference capture analyzed with
mode="train" gave its forward GEMMs alone under a "train" header (2 of 5 GEMMs, half the
FLOPs) and a seq was printed in the header while every number stayed the capture's."""

from __future__ import annotations

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402
from torch import nn  # noqa: E402

import roofline  # noqa: E402
from roofline import InputError, analyze_model  # noqa: E402
from roofline.torch import capture  # noqa: E402


def _mlp():
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))


def test_a_captured_step_keeps_its_mode():
    x = torch.zeros(64, 256)
    with pytest.raises(InputError, match=r"captured in mode inference; mode train needs a "
                                         r"capture in it \(roofline.torch.capture\(\.\.\., "
                                         r"mode='train'\)\)"):
        analyze_model(capture(_mlp(), x, mode="inference"), "h100", mode="train")
    with pytest.raises(InputError, match="captured in mode train; mode inference"):
        roofline.compare(capture(_mlp(), x, mode="train"), ["h100", "a100"], mode="inference")
    # the same mode, a dtype and an optimizer are what overrides are for: training's five
    # GEMMs, 3 x 2 x 64 x (256 x 1024 + 1024 x 10) less fc1's data gradient (its input needs
    # none, 2 x 64 x 1024 x 256): 104,595,456 - 33,554,432 = 71,041,024 FLOPs
    trained = capture(_mlp(), x, mode="train")
    for overrides in ({"mode": "train"}, {"dtype": "bf16"}, {"optimizer": "adam"}):
        report = analyze_model(trained, "h100", **overrides)
        assert report.totals["gemm_flops"] == 71_041_024, overrides


def test_a_captured_step_keeps_its_shapes_and_attention():
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    net = capture(layer, torch.zeros(2, 10, 64))
    with pytest.raises(InputError, match="a seq of 128 needs a capture with inputs of that "
                                         "shape"):
        roofline.sweep(net, "h100", seqs=[128, 1024])
    with pytest.raises(InputError, match="captured in attention flash; attention naive"):
        analyze_model(net, "h100", attention="naive")
    assert analyze_model(net, "h100", attention="flash").totals == analyze_model(
        net, "h100").totals
    with pytest.raises(InputError, match="phase: a captured module's step"):
        analyze_model(capture(layer, torch.zeros(2, 10, 64), mode="inference"), "h100",
                      phase="decode")


def test_a_captured_module_is_refused_a_generation_by_its_capture():
    """A generation runs the prefill at the prompt's length and decode steps over a growing KV
    cache; a capture holds its inputs' one length. A transformer layer captured at 10 tokens
    was refused as if it had no attention ("no layer keeps one (no transformer block)")."""
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    net = capture(layer, torch.zeros(2, 10, 64), mode="inference")
    for run in (lambda: analyze_model(net, "h100", prompt=8, generate=4),
                lambda: roofline.compare(net, ["h100", "a100"], prompt=8, generate=4),
                lambda: roofline.sweep(net, "h100", batches=[2], prompt=8, generate=4)):
        with pytest.raises(InputError, match="generate: a captured module's step is its "
                                             "example inputs' shapes, one length") as caught:
            run()
        assert "no transformer block" not in str(caught.value)


def test_the_cli_refuses_a_seq_on_a_capture(invoke, tmp_path, monkeypatch):
    (tmp_path / "mkmod.py").write_text(
        "import torch\nfrom torch import nn\n\ndef make():\n    return nn.TransformerEncoderLayer"
        "(64, 4, 128, batch_first=True), torch.zeros(2, 10, 64)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke("analyze", "mkmod:make", "--hw", "h100", "--seq", "4096")
    assert result.exit_code == 2
    assert "seq: a captured module's step is its example inputs' shapes" in result.output
    # the capture takes its mode and attention from the options: no refusal
    assert invoke("analyze", "mkmod:make", "--hw", "h100", "--mode", "inference",
                  "--attention", "naive").exit_code == 0


def test_a_capture_and_an_override_take_a_torch_dtype():
    linear = nn.Linear(8, 8)
    assert capture(linear, torch.zeros(4, 8), dtype=torch.bfloat16).dtype == "bf16"
    assert capture(linear, torch.zeros(4, 8), dtype="float16").dtype == "fp16"
    net = capture(linear, torch.zeros(4, 8))
    assert analyze_model(net, "h100", dtype=torch.float16).network.dtype == "fp16"


def test_a_training_step_backpropagates_the_first_scalar_it_returns():
    # (loss, a logged probe's loss): a training loop calls loss.backward(); every scalar was
    # backpropagated, counting the probe head's weight gradient, 2 x 64 x 1024 x 10 FLOPs
    from torch.utils.flop_counter import FlopCounterMode

    class TwoLosses(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body, self.head, self.probe = nn.Linear(256, 1024), nn.Linear(1024, 10), \
                nn.Linear(1024, 10)

        def forward(self, x):
            h = self.body(x).relu()
            return self.head(h).square().mean(), self.probe(h.detach()).square().mean()

    x = torch.zeros(64, 256)
    with FlopCounterMode(display=False) as counter:
        loss, _probe = TwoLosses()(x)
        loss.backward()
    report = analyze_model(capture(TwoLosses(), x, mode="train"), "h100")
    assert report.totals["gemm_flops"] == counter.get_total_flops()


def test_a_group_norm_is_costed_as_a_layer_norm_per_value():
    # GroupNorm(4, 8) over 2 x 8 x 16 x 16 = 4,096 values: 8 FLOPs a value forward (as a layer
    # norm's), 12 backward; it was named uncosted with 0 FLOPs
    net = capture(nn.GroupNorm(4, 8), torch.zeros(2, 8, 16, 16), mode="train")
    assert net.uncosted == ()
    ops = {op.kind: op.flops for op in net.ops()}
    assert ops["aten.native_group_norm"] == 8 * 4096
    assert ops["aten.native_group_norm_backward"] == 12 * 4096


def test_a_factory_given_a_generation_is_refused_before_its_capture(invoke, tmp_path,
                                                                     monkeypatch):
    """analyze and compare captured ``package.module:callable`` (seconds for a large model)
    and only then refused --prompt/--generate; the refusal now comes first: the factory is
    never imported (its module would raise if it were)."""
    (tmp_path / "mkboom.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for command in (("analyze", "mkboom:make", "--hw", "h100"),
                    ("compare", "mkboom:make", "--hw", "h100", "--hw", "a100")):
        result = invoke(*command, "--prompt", "8", "--generate", "4")
        assert result.exit_code == 2, result.output
        assert result.stderr.splitlines() == [
            "Error: mkboom:make: generate: a captured module's step is its example inputs' "
            "shapes, one length: a generation's prefill and decode steps at every length need "
            "a model.yaml or config.json"], result.stderr


@pytest.mark.parametrize("kind, key", [("tensor", "tp"), ("pipeline", "pp")])
def test_serving_a_captured_module_over_gpus_says_it_was_captured(kind, key):
    # a captured module's layers are the ops torch ran, never a transformer block: tp and pp
    # have nothing to split, which the refusal says of the capture (it said "the model has
    # none" of a module that may well be a transformer)
    net = capture(_mlp(), torch.zeros(8, 256), mode="inference")
    with pytest.raises(InputError, match=rf"{kind} parallelism splits transformer blocks, and "
                                         rf"a captured module has none: its layers are the ops "
                                         rf"torch ran; serve the model from its config.json"):
        analyze_model(net, "h100", **{key: 2})
