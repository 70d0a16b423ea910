"""roofline.torch.capture against independent routes: torch's own FlopCounterMode on the same
run, and roofline's model.yaml for the same network (tools/torch_flops.py builds the examples
by hand in torch.nn). Needs torch (the `torch` extra; .ci/run installs it)."""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from roofline.model.capture import CaptureError  # noqa: E402
from roofline.model.network import load_network, network_from_dict  # noqa: E402
from roofline.torch import capture  # noqa: E402

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import torch_flops  # noqa: E402


def _meta(make):
    with torch.device("meta"):
        return make()


def _torch_flops(module, x, mode):
    params = {n: torch.empty_like(p, device="meta").requires_grad_(mode == "train")
              for n, p in module.named_parameters()}
    with FlopCounterMode(display=False) as counter:
        out = torch.func.functional_call(module, params, (x,))
        if mode == "train":
            out.backward(torch.empty_like(out))
    return counter.get_total_flops()


CASES = {"mlp": (torch_flops.mlp, lambda: torch.empty(512, 1024, device="meta")),
         "gpt2": (torch_flops.gpt2, lambda: torch.zeros(2, 128, dtype=torch.long,
                                                        device="meta"))}


@pytest.mark.parametrize("mode", ["inference", "train"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gemm_flops_equal_flop_counter_mode(name, mode):
    make, inputs = CASES[name]
    module, x = _meta(make), inputs()
    net = capture(module, x, mode=mode, attention="naive")
    assert sum(g.flops for g in net.gemms()) == _torch_flops(module, x, mode)
    assert net.parameters == sum(p.numel() for p in module.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inference", "train"])
def test_resnet50_flops_equal_flop_counter_mode(mode):
    module, x = _meta(torch_flops.resnet50), torch.empty(64, 3, 224, 224, device="meta")
    net = capture(module, x, mode=mode)
    assert sum(g.flops for g in net.gemms()) == _torch_flops(module, x, mode)


def _key(g):
    # torch writes a linear layer's weight gradient as dY^T X (out x in), roofline's linear
    # layer as X^T dY (in x out): the same GEMM transposed, so M and N are compared unordered
    return (g.pass_, *sorted((g.m, g.n)), g.k, g.batch_count)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inference", "train"])
def test_resnet50_gemms_are_the_model_yaml_ones(mode):
    # the same 54 forward GEMMs (53 convolutions and the classifier) and, training, the same
    # gradients: shapes, passes and, for the convolutions, the tensors they move
    module, x = _meta(torch_flops.resnet50), torch.empty(64, 3, 224, 224, device="meta")
    captured = capture(module, x, mode=mode).gemms()
    yaml = load_network(ROOT / "examples" / "resnet50.yaml").with_overrides(
        batch=64, mode=mode, dtype="fp32").gemms()
    assert Counter(map(_key, captured)) == Counter(map(_key, yaml))
    convs = Counter((_key(g), g.tensors) for g in captured if g.tensors)
    assert convs == Counter((_key(g), g.tensors) for g in yaml if g.tensors)
    assert len(captured) == (54 if mode == "inference" else 161)


def test_backward_gemms_belong_to_their_module_and_pass():
    # two linear layers 64 -> 256 -> 64 at batch 256: the first layer's output (256 x 256) has
    # its weight's shape, so only the operands tell a data gradient from a weight gradient
    module = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 64))
    net = capture(module, torch.zeros(256, 64), mode="train")
    rows = [(g.layer, g.pass_, g.m, g.n, g.k) for g in net.gemms()]
    assert rows == [("0", "forward", 256, 256, 64), ("2", "forward", 256, 64, 256),
                    ("2", "backward-data", 256, 256, 64), ("2", "backward-weight", 64, 256, 256),
                    ("0", "backward-weight", 256, 64, 256)]
    # B is the weight in the forward and data-gradient GEMMs (read from DRAM at every use in
    # a step beyond the cache: analysis.residency), not in the weight gradients
    assert [g.b_operand for g in net.gemms()] == ["weight", "weight", "weight", "", ""]


def test_attentions_backward_products_are_data_gradients_in_a_module_with_weights():
    """A module with a weight that also multiplies activations (naive attention): the backward
    of a product of two activations gives their gradients, data gradients (no weight of the
    module has their (2, 16, 64) shape); the one whose product has the weight's 64 x 64 shape
    is its gradient. A data gradient counts no weight-gradient buffer (``grad_accumulation``)."""

    class Scores(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(64, 64))

        def forward(self, x):
            q = x @ self.w  # (2, 16, 64): folded into one 32 x 64 x 64 mm
            return (q @ x.transpose(1, 2)).softmax(-1) @ x  # two bmm's of the activations

    net = capture(Scores(), torch.zeros(2, 16, 64), mode="train")
    # the input needs no gradient: autograd computes dS = dOut x^T (2 x 16 x 16), dq = dS x
    # (2 x 16 x 64) and dW = x^T dq (64 x 64 over the 32 rows); all three were weight
    # gradients before, the module having a weight and none of them reading it
    assert [(g.pass_, g.batch_count, g.m, g.n, g.k) for g in net.gemms()
            if g.pass_ != "forward"] == [("backward-data", 2, 16, 16, 64),
                                         ("backward-data", 2, 16, 64, 16),
                                         ("backward-weight", 1, 64, 64, 32)]


def test_each_operands_layout_is_read_from_its_strides():
    """What autograd hands cuBLAS: x W^T reads both along K (W^T a transposed view of the out x
    in weight), dY W reads W along N, dY^T X reads dY^T along M (a transposed view) and X along
    N; a matmul of a transposed operand says so too (``Gemm.rows``: 0 M, 1 N, 2 K)."""
    from roofline.analysis.alignment import strided_operands

    module = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 64))
    net = capture(module, torch.zeros(256, 64), mode="train")
    assert [(g.pass_, g.rows, strided_operands(g)) for g in net.gemms()] == [
        ("forward", (2, 2, 1), 0), ("forward", (2, 2, 1), 0),
        ("backward-data", (2, 1, 1), 1), ("backward-weight", (0, 1, 1), 2),
        ("backward-weight", (0, 1, 1), 2)]

    class TransposedMatmul(torch.nn.Module):
        def forward(self, a, b):
            return a.t() @ b.t()  # A along M, B along K

    (gemm,) = capture(TransposedMatmul(), torch.zeros(32, 16), torch.zeros(48, 32),
                      mode="inference").gemms()
    assert (gemm.m, gemm.n, gemm.k, gemm.rows) == (16, 48, 32, (0, 2, 1))


def test_a_copy_is_strided_when_its_source_is_laid_out_unlike_its_output():
    """torch copies operands laid out alike as one contiguous run and any other through its
    strided loop: contiguous() of a transposed view permutes (and so does the copy torch.matmul
    makes of a head-split Q); clone() of that view keeps its strides, a cast of a contiguous
    tensor keeps them too, and a broadcast source is laid out unlike its output."""

    class Copies(torch.nn.Module):
        def forward(self, x, q, k, row):
            out = row.new_empty((4, 8))
            out.copy_(row)  # (8,) broadcast over 4 rows: strided
            return (x.transpose(0, 1).contiguous(),  # permuted: strided
                    x.transpose(0, 1).clone(),  # strides kept (preserve_format): a run
                    x.clone(), x.to(torch.float64),  # contiguous: runs
                    q @ k.transpose(-1, -2),  # (b, h, s, d) views of (b, s, h, d): copies
                    out)

    b, s, h, d = 2, 16, 4, 8
    q = torch.zeros(b, s, h, d).transpose(1, 2)
    k = torch.zeros(b, s, h, d).transpose(1, 2)
    net = capture(Copies(), torch.zeros(32, 64), q, k, torch.zeros(8), mode="inference")
    copies = [(o.kind, o.strided) for o in net.ops()]
    assert copies == [("aten.copy_", True), ("aten.clone", True), ("aten.clone", False),
                      ("aten.clone", False), ("aten._to_copy", False), ("aten.clone", True),
                      ("aten.clone", True)]
    # a strided copy of a transposed 32 x 64 fp32 tensor reads and writes 2,048 values
    assert [o.bytes for o in net.ops()][1] == 2 * 32 * 64 * 4


def test_a_captured_permuted_copy_says_how_a_gpu_prices_it():
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware
    from roofline.output.times import time_lines

    class Heads(torch.nn.Module):
        def forward(self, x):
            return x.view(2, 16, 4, 8).transpose(1, 2).contiguous()

    net = capture(Heads(), torch.zeros(2, 16, 32), mode="inference")
    report = analyze(net, load_hardware("h100-sxm5-80gb"))
    data = report.to_dict()
    assert [op["predicted_basis"] for op in data["ops"]] == ["strided-copy"]
    assert "CUDALoops.cuh" in data["op_prediction"]["sources"]["strided-copy"]
    assert "permuted copies at the rate torch's strided copy kernel" in "\n".join(
        time_lines(report))
    # a CPU prices it by its class, as before (no calibration here: its roof)
    (cpu,) = analyze(net, load_hardware("xeon-platinum-8380")).ops
    assert cpu.predicted_basis == "roofline"


def test_a_softmax_over_its_last_dimension_keeps_its_rows_width():
    """torch's CUDA softmax runs one warp or block a row when it normalizes the last dimension
    (aten/src/ATen/native/cuda/SoftMax.cu, ``inner_size == 1``) and prices by that row's width
    (``analysis.gpu_ops``): the capture keeps it, for ``_softmax`` and ``_log_softmax`` and
    their backwards (``_softmax_backward_data(grad_output, output, dim, input_dtype)``: the
    output gradient's last dimension); across another dimension, no row."""

    class Softmaxes(torch.nn.Module):
        def forward(self, x):
            return (torch.softmax(x, -1), torch.log_softmax(x, dim=2), torch.softmax(x, 1))

    net = capture(Softmaxes(), torch.zeros(2, 6, 96, dtype=torch.bfloat16), mode="inference")
    assert [(o.kind, o.row) for o in net.ops()] == [("aten._softmax", 96),
                                                    ("aten._log_softmax", 96),
                                                    ("aten._softmax", 0)]
    train = capture(torch.nn.Sequential(torch.nn.Linear(40, 40), torch.nn.Softmax(dim=-1)),
                    torch.zeros(4, 40))
    assert [(o.kind, o.row) for o in train.ops() if "softmax" in o.kind] == [
        ("aten._softmax", 40), ("aten._softmax_backward_data", 40)]
    # on a GPU the two over the last dimension (bf16) take torch's row rate, the third streams
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware
    from roofline.output.times import time_lines

    report = analyze(net, load_hardware("h100-sxm5-80gb"))
    assert [r.predicted_basis for r in report.ops] == ["softmax-rows", "softmax-rows",
                                                       "streaming"]
    assert "SoftMax.cu" in report.to_dict()["op_prediction"]["sources"]["softmax-rows"]
    assert "softmaxes at the rate torch's softmax kernel for the row's width works through its values (2-4.7" in (
        "\n".join(time_lines(report)))


def test_16_bit_convolutions_on_nchw_tensors_are_said_to_be_left_out_on_a_gpu():
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware
    from roofline.output.advice import report_warnings

    def net(layout, dtype=torch.bfloat16, norm=True):
        between = torch.nn.BatchNorm2d(32) if norm else torch.nn.ReLU()
        module = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3), between,
                                     torch.nn.Conv2d(32, 32, 1)).to(dtype)
        x = torch.zeros(8, 16, 28, 28, dtype=dtype)
        if layout == "channels_last":
            module, x = (module.to(memory_format=torch.channels_last),
                         x.to(memory_format=torch.channels_last))
        return capture(module, x, mode="train")

    nchw = net("nchw")
    assert nchw.nchw_convs == 2  # forward convolutions only, not their gradients
    (warning,) = [w for w in report_warnings(analyze(nchw, load_hardware("h100")))
                  if "NCHW" in w]
    assert warning.startswith("2 convolutions ran in bf16 on NCHW tensors")
    assert "took 30.9 ms against 25.3 predicted" in warning
    assert "of the predicted step" in warning
    assert "channels_last" in warning
    assert "batch norm on NCHW runs torch's slower kernels" in warning  # a bf16 batch norm
    # without a batch norm the sentence names none (it did), the evidence kept
    (plain,) = [w for w in report_warnings(analyze(net("nchw", norm=False),
                                                   load_hardware("h100"))) if "NCHW" in w]
    assert "batch norm" not in plain
    assert "around some); a lent H100's ResNet-50 bf16 training step" in plain
    assert "took 30.9 ms against 25.3 predicted" in plain
    assert not any("NCHW" in w for w in report_warnings(
        analyze(nchw, load_hardware("xeon-platinum-8480plus"))))  # a CPU: no such kernels
    assert net("channels_last").nchw_convs == 0
    assert net("nchw", torch.float32).nchw_convs == 0  # fp32: no Tensor-Core layout


def test_flash_attention_is_one_fused_op():
    # one causal attention, batch 2, 4 heads, 128 tokens, head dim 64: 4 B H s^2 d / 2 FLOPs
    class Attention(torch.nn.Module):
        def forward(self, q):
            return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    net = capture(Attention(), torch.zeros(2, 4, 128, 64), mode="inference")
    (op,) = [o for o in net.ops() if o.kind == "flash-attention"]
    assert op.flops == 4 * 2 * 4 * 128 * 128 * 64 // 2 == 16_777_216
    assert not net.gemms()


def test_flash_attention_in_training_keeps_its_log_sum_exp():
    # the same attention (q = k = v, 2 x 4 x 128 x 64, fp32) trained: forward reads Q, K, V and
    # writes O, 4 x 65,536 values of 4 B, and writes one fp32 log-sum-exp per query row,
    # 2 x 4 x 128 x 4 B; the backward reads Q, K, V, O, dO and the log-sum-exp and writes dQ,
    # dK, dV (8 x 65,536 values); as the transformer layer counts them
    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(64))

        def forward(self, x):
            q = x * self.scale
            return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    net = capture(Attention(), torch.zeros(2, 4, 128, 64), mode="train")
    ops = {o.kind: o for o in net.ops() if o.kind.startswith("flash")}
    values, lse = 2 * 4 * 128 * 64, 2 * 4 * 128 * 4
    assert ops["flash-attention"].bytes == 4 * values * 4 + lse == 1_052_672
    assert ops["flash-attention-backward"].bytes == 8 * values * 4 + lse == 2_101_248
    assert ops["flash-attention-backward"].flops == 10 * 2 * 4 * 128 * 128 * 64 // 2


def test_a_tied_weight_has_its_gradient_gemm_where_it_is_used():
    # GPT-2's LM head shares the token embedding's weight (100 x 16 here; 4 x 8 tokens): the
    # head's backward GEMM that reads no weight is its weight gradient dW = dY^T X (100 x 16
    # over the 32 tokens), not a data gradient; the weight is counted once
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 16)
            self.head = torch.nn.Linear(16, 100, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, tokens):
            return self.head(self.embed(tokens))

    net = capture(Tied(), torch.zeros(4, 8, dtype=torch.long), mode="train")
    rows = sorted((g.layer, g.pass_, g.m, g.n, g.k) for g in net.gemms())
    assert rows == [("head", "backward-data", 32, 16, 100),
                    ("head", "backward-weight", 100, 16, 32), ("head", "forward", 32, 100, 16)]
    assert net.parameters == 100 * 16


def test_a_reduction_counts_a_flop_per_value_it_reads():
    # Linear(256, 64) trained at batch 512: its bias gradient sums dY (512 x 64) over the rows:
    # 512 x 64 = 32,768 adds, reading 32,768 values and writing 64 (4 B each)
    net = capture(torch.nn.Linear(256, 64), torch.zeros(512, 256), mode="train")
    (bias,) = [o for o in net.ops() if o.kind == "aten.sum"]
    assert bias.flops == 512 * 64 == 32_768
    assert bias.bytes == (512 * 64 + 64) * 4 == 131_328


def test_the_step_asked_for_runs_whatever_mode_the_module_was_left_in():
    # a new module trains: captured for inference it ran its dropout and batch statistics
    def make():
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32),
                                   torch.nn.Dropout(0.1), torch.nn.Linear(32, 8))

    fresh = make()
    assert fresh.training
    kinds = {o.kind for o in capture(fresh, torch.zeros(4, 16), mode="inference").ops()}
    assert "aten._native_batch_norm_legit_no_training" in kinds
    assert not any("dropout" in k or "bernoulli" in k for k in kinds)  # dropout's mask
    assert all(m.training for m in fresh.modules())  # its own flags back
    # and the other way: an eval module trained runs its batch statistics and dropout
    frozen = make().eval()
    ops = capture(frozen, torch.zeros(4, 16), mode="train").ops()
    kinds = {o.kind for o in ops}
    assert "aten._native_batch_norm_legit_no_training" not in kinds
    assert "aten.native_dropout" in kinds  # dropout draws its mask (CUDA's fused kernel)
    assert not any(m.training for m in frozen.modules())


def test_eval_batch_norm_is_a_scale_and_shift_and_pooling_backward_reads_no_input():
    # BatchNorm2d(4) in eval on 2 x 4 x 8 x 8 = 512 values: y = x alpha_c + beta_c (torch's
    # inference path), 2 FLOPs a value (8, a training batch norm's, before)
    net = capture(torch.nn.BatchNorm2d(4), torch.zeros(2, 4, 8, 8), mode="inference")
    (bn,) = [o for o in net.ops() if "batch_norm" in o.kind]
    assert bn.flops == 2 * 512
    # MaxPool2d(2) trained on 2 x 4 x 8 x 8: the backward reads dY (2 x 4 x 4 x 4 = 128 fp32
    # values) and the int64 indices (128 x 8 B) and writes dX (512 fp32): 128 x 4 + 128 x 8 +
    # 512 x 4 = 3,584 B; it read the forward input too (another 2,048 B), which torch passes
    # only for its shape
    pool = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 1), torch.nn.MaxPool2d(2))
    net = capture(pool, torch.zeros(2, 4, 8, 8), mode="train")
    (back,) = [o for o in net.ops() if o.kind == "aten.max_pool2d_with_indices_backward"]
    assert back.bytes == 128 * 4 + 128 * 8 + 512 * 4 == 3_584
    avg = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 1), torch.nn.AvgPool2d(2))
    net = capture(avg, torch.zeros(2, 4, 8, 8), mode="train")
    (back,) = [o for o in net.ops() if o.kind == "aten.avg_pool2d_backward"]
    assert back.bytes == 128 * 4 + 512 * 4 == 2_560  # dY read, dX written


def test_a_linear_bias_is_an_op_as_torch_adds_it():
    # Linear(256, 64) with a bias at batch 512 runs as addmm(b, x, W^T): torch copies b,
    # broadcast, into the 512 x 64 output, then multiplies with beta = 1, reading it back:
    # b read (64 values), the output written and read again (2 x 32,768), one add a value
    net = capture(torch.nn.Linear(256, 64), torch.zeros(512, 256), mode="inference")
    (bias,) = net.ops()
    assert bias.kind == "bias"
    assert bias.flops == 512 * 64 == 32_768
    assert bias.bytes == (2 * 512 * 64 + 64) * 4 == 262_400
    # the model.yaml layer's bias op over the same outputs moves the same, less b itself
    yaml = network_from_dict({"name": "l", "batch": 512, "dtype": "fp32", "mode": "inference",
                              "layers": [{"type": "linear", "in": 256, "out": 64,
                                          "bias": True}]}, "<test>")
    (layer_bias,) = [o for o in yaml.ops() if o.kind == "bias"]
    assert bias.bytes - layer_bias.bytes == 64 * 4
    assert bias.flops == layer_bias.flops


def test_a_convolutions_bias_is_an_op_after_it_and_its_gradient_one_in_the_backward():
    # Conv2d(8, 16, 3, padding=1) with a bias on 2 x 8 x 10 x 10: the output is 2 x 16 x 10 x
    # 10 = 3,200 values. Forward: the add over them, the output written and read (2 x 3,200)
    # and the 16 biases read: (6,400 + 16) x 4 B = 25,664 B, 3,200 adds. Backward: the sum of
    # dY per channel, 3,200 values read and 16 written: (3,200 + 16) x 4 = 12,864 B.
    net = capture(torch.nn.Conv2d(8, 16, 3, padding=1), torch.zeros(2, 8, 10, 10),
                  mode="train")
    (bias,) = [o for o in net.ops() if o.kind == "bias"]
    assert (bias.pass_, bias.follows, bias.flops, bias.bytes) == ("forward", "conv", 3_200,
                                                                  25_664)
    (grad,) = [o for o in net.ops() if o.kind == "bias-backward"]
    assert (grad.pass_, grad.follows, grad.flops, grad.bytes) == ("backward", "conv", 3_200,
                                                                  12_864)
    # model.yaml's conv2d with bias: true moves the same, less the 16 biases
    yaml = network_from_dict({"name": "c", "batch": 2, "dtype": "fp32", "mode": "train",
                              "input": {"channels": 8, "height": 10, "width": 10},
                              "layers": [{"type": "conv2d", "out_channels": 16, "kernel": 3,
                                          "padding": 1, "bias": True}]}, "<test>")
    by_kind = {o.kind: o for o in yaml.ops()}
    assert bias.bytes - by_kind["bias"].bytes == 16 * 4
    assert grad.bytes - by_kind["bias-backward"].bytes == 16 * 4
    assert (by_kind["bias"].follows, by_kind["bias-backward"].follows) == ("conv", "conv")
    # without a bias, no op; a Linear's bias follows "linear"
    assert capture(torch.nn.Conv2d(8, 16, 3, bias=False), torch.zeros(2, 8, 10, 10),
                   mode="train").ops() == ()
    (linear,) = capture(torch.nn.Linear(4, 4), torch.zeros(2, 4), mode="inference").ops()
    assert linear.follows == "linear"


def test_no_bias_no_op_and_beta_zero_adds_nothing():
    assert capture(torch.nn.Linear(256, 64, bias=False), torch.zeros(512, 256),
                   mode="inference").ops() == ()

    class Scores(torch.nn.Module):  # baddbmm with beta = 0, as some attention code writes it
        def forward(self, q):
            return torch.baddbmm(torch.empty(4, 8, 8, device=q.device), q,
                                 q.transpose(1, 2), beta=0.0)

    net = capture(Scores(), torch.zeros(4, 8, 16), mode="inference")
    assert net.ops() == ()
    (gemm,) = net.gemms()
    assert (gemm.m, gemm.n, gemm.k, gemm.batch_count) == (8, 8, 16, 4)


def test_an_op_on_empty_tensors_is_no_row():
    # an op whose tensors hold no value moves nothing: no row (a row of 0 bytes has no
    # intensity and failed the report; Llama's rotary embedding makes such zeros in training)
    class Empty(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x) + torch.zeros(0, 4, device=x.device).sum()

    report = capture(Empty(), torch.zeros(2, 4), mode="train", hw="h100")
    assert all(o.op.bytes > 0 for o in report.ops)


def test_a_report_on_a_device_and_a_batch_it_was_not_captured_at():
    module = torch.nn.Linear(1024, 1024)
    report = capture(module, torch.zeros(8, 1024), mode="inference", hw="a100-sxm4-80gb")
    (result,) = report.results
    assert (result.gemm.m, result.gemm.n, result.gemm.k) == (8, 1024, 1024)
    with pytest.raises(Exception, match="captured at batch 8"):
        report.network.with_overrides(batch=16).gemms()


def test_a_captured_gemm_claims_nothing_about_another_batch():
    """A capture records each GEMM's shape at its one batch, not which dimension is the batch:
    Linear(1024, 4096) at batch 64 is M = 64, N = 4096, K = 1024, and a Linear(4096, 64) the
    same M = 64 with N = 64 (its width, not the batch). Memory-bound on an H100 in fp16 (2 x 64
    x 4096 x 1024 FLOPs over 2 x (64 x 1024 + 1024 x 4096 + 64 x 4096) B = 59.4 FLOP/B), its
    advice says it was captured at batch 64, not that its shape does not depend on the batch;
    the same layers read from model.yaml, whose M is the batch, keep their batch advice."""
    module = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.Linear(4096, 64))
    report = capture(module, torch.zeros(64, 1024), mode="inference", dtype="fp16", hw="h100")
    mm1 = report.results[0]
    assert (mm1.gemm.m, mm1.gemm.n, mm1.gemm.k) == (64, 4096, 1024)
    assert mm1.gemm.intensity == pytest.approx(59.36, abs=0.01) and mm1.bound == "memory"
    assert mm1.min_compute_bound_batch is None
    captured = ("captured at batch 64: which of its dimensions grow with the batch is not "
                "recorded; capture it at another batch (a factory with a batch parameter) to "
                "see how it scales")
    assert [r.advice[-1] for r in report.results] == [captured, captured]
    yaml = network_from_dict({"batch": 64, "dtype": "fp16", "mode": "inference",
                              "mlp": [1024, 4096, 64]}, "<test>")
    from roofline.api import analyze_model

    # model.yaml's M is the batch: 4096 x 1024 B FLOPs over (5120 B + 4096 x 1024) B reach the
    # H100's fp16 ridge (295.4) from B = 462; 64 x 4096 never (2 x 64 x 4096 / (2 x 4160) = 63.0)
    assert [r.advice[-1] for r in analyze_model(yaml, "h100").results] == [
        "batch >= 462 makes it compute-bound; 512 also meets the 128-byte tier (a multiple of "
        "64)", "no batch reaches the ridge (295.4): intensity tends to 63.0 FLOP/B; widen the "
        "layer"]


def test_data_dependent_control_flow_names_the_module_and_op():
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            return y if y.sum().item() > 0 else -y

    # the root module's forward calls .item() on the sum: the error names it and the op that
    # failed, the one .item() runs
    with pytest.raises(CaptureError, match=r"module 'Branchy', op aten._local_scalar_dense "
                                           r"failed on the meta device \(RuntimeError: "
                                           r"Tensor.item\(\)"):
        capture(Branchy(), torch.zeros(2, 4))


def test_a_submodule_failing_on_meta_tensors_is_named_with_its_op():
    # the child copies its input to the CPU, which a meta tensor cannot do: the error names the
    # child (not the linear layer before it) and the op that failed
    class Child(torch.nn.Module):
        def forward(self, x):
            return x.cpu() * 2

    class Parent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.child = Child()

        def forward(self, x):
            return self.child(self.fc(x))

    with pytest.raises(CaptureError, match=r"^Parent: module 'child', op aten._to_copy failed "
                                           r"on the meta device \(NotImplementedError: Cannot "
                                           r"copy out of meta tensor; no data!\)"):
        capture(Parent(), torch.zeros(2, 4))


def test_the_modules_own_code_failing_is_not_blamed_on_the_op_before_it():
    # the linear layer's addmm ran; the forward's own raise came after it
    class Raises(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            self.fc(x)
            raise ValueError("not on this input")

    with pytest.raises(CaptureError, match=r"^Raises: the module's code, after op aten.addmm in "
                                           r"module 'fc', failed on the meta device "
                                           r"\(ValueError: not on this input\)"):
        capture(Raises(), torch.zeros(2, 4), mode="inference")


def test_an_op_failure_the_module_caught_is_not_blamed_for_a_later_raise():
    class Catches(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            try:
                x.cpu()  # a meta tensor cannot be copied out: the module handles it
            except NotImplementedError:
                pass
            self.fc(x)
            raise ValueError("then this")

    with pytest.raises(CaptureError, match=r"^Catches: the module's code, after op aten.addmm "
                                           r"in module 'fc', failed .*ValueError: then this"):
        capture(Catches(), torch.zeros(2, 4), mode="inference")


@pytest.mark.parametrize("module", [torch.nn.Identity(), torch.nn.Sequential(),
                                    torch.nn.Flatten()])
def test_a_module_that_runs_no_op_is_one_line_in_either_mode(module):
    for mode in ("inference", "train"):
        with pytest.raises(CaptureError, match="nothing to analyze|no output needs a gradient"):
            capture(module, torch.zeros(2, 4), mode=mode)


def test_an_op_of_unknown_cost_is_listed_with_its_bytes(invoke, tmp_path, monkeypatch):
    # erfcx has no FLOP count in the table: its row stays, 0 FLOPs and its bytes (8 values
    # read, 8 written, 4 B each: 64 B), and the report names it; before it, the Linear's bias
    # (4 values read, the 2 x 4 output written and read back: 80 B, one add a value)
    class Erfcx(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.special.erfcx(self.fc(x))

    net = capture(Erfcx(), torch.zeros(2, 4), mode="inference")
    assert net.uncosted == ("aten.special_erfcx",)
    assert [(o.kind, o.flops, o.bytes) for o in net.ops()] == [("bias", 8, 80),
                                                                  ("aten.special_erfcx", 0, 64)]
    (tmp_path / "capture_erfcx_example.py").write_text(
        "import torch\n"
        "def make():\n"
        "    fc = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Softplus(), "
        "torch.nn.Mish())\n"
        "    return fc, torch.zeros(2, 4)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke("analyze", "capture_erfcx_example:make", "--hw", "h100", "--mode",
                    "inference", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["uncosted_ops"] == ["aten.mish", "aten.softplus"]
    assert {o["kind"] for o in data["ops"]} == {"bias", "aten.mish", "aten.softplus"}


def test_not_a_module():
    with pytest.raises(CaptureError, match="expected a torch.nn.Module, got function"):
        capture(lambda x: x, torch.zeros(2))


FACTORY = '''
import torch
def make():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU()), torch.zeros(32, 64)
def batched(batch=32):
    return torch.nn.Linear(64, 128), torch.zeros(batch, 64)
def ignores(batch=32):
    return torch.nn.Linear(64, 128), torch.zeros(32, 64)
def wrong():
    return torch.nn.Linear(4, 4)
def unpacked():
    return torch.nn.Linear(4, 4), torch.zeros(2, 4), torch.zeros(2, 4)
def broken():
    raise RuntimeError("no weights here")
'''


def test_the_cli_analyzes_a_factory(invoke, tmp_path, monkeypatch):
    (tmp_path / "capture_factory_example.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke("analyze", "capture_factory_example:make", "--hw", "h100", "--mode",
                    "inference", "--format", "json")
    assert result.exit_code == 0, result.output
    import json

    data = json.loads(result.stdout)
    # one GEMM 32 x 128 x 64 (the addmm), its bias and the GELU over 32 x 128 values
    assert [(g["m"], g["n"], g["k"]) for g in data["gemms"]] == [(32, 128, 64)]
    assert [o["kind"] for o in data["ops"]] == ["bias", "aten.gelu"]
    assert data["uncosted_ops"] == []
    for name, text in (("wrong", "must return a 2-tuple (module, example_inputs), example_inputs "
                                 "one tensor or a tuple of them; got a Linear"),
                       ("unpacked", "2-tuple (module, example_inputs), example_inputs one "
                                    "tensor or a tuple of them; got a tuple of 3"),
                       ("broken", "the factory raised RuntimeError: no weights here"),
                       ("missing", "capture_factory_example has no missing")):
        result = invoke("analyze", f"capture_factory_example:{name}", "--hw", "h100")
        assert result.exit_code == 2
        assert text in result.stderr and "Traceback" not in result.output


# a package whose modules fail as they are imported, each its own way
FAILING = {"syntax": "def f(:\n",
           "zerodiv": "x = 1 / 0\ndef f():\n    pass\n",
           "attrerr": "import os\nos.nonexistent_attr\ndef f():\n    pass\n",
           "nested": "import capture_no_such_dependency\ndef f():\n    pass\n",
           "fine": "def f():\n    pass\n"}


def test_a_module_that_fails_to_import_is_one_line_naming_it(invoke, tmp_path, monkeypatch):
    """The module's own error as it ran, with its file and line: not a traceback (a
    SyntaxError, a ZeroDivisionError), not "has no f" (an AttributeError of the import's own),
    not "cannot import" the module found (an import inside it that fails)."""
    package = tmp_path / "capture_failing_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in FAILING.items():
        (package / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    where = str(package)
    for name, error, line in (
            ("syntax", "SyntaxError: invalid syntax", 1),
            ("zerodiv", "ZeroDivisionError: division by zero", 1),
            ("attrerr", "AttributeError: module 'os' has no attribute 'nonexistent_attr'", 2),
            ("nested", "ModuleNotFoundError: No module named 'capture_no_such_dependency'", 1)):
        spec = f"capture_failing_pkg.{name}:f"
        result = invoke("analyze", spec, "--hw", "h100")
        assert result.exit_code == 2, result.output
        # the one line, after the progress line that says the import starts
        assert result.stderr == (f"importing {spec} and calling it for its module and inputs "
                                 f"...\nError: {spec}: importing capture_failing_pkg.{name} "
                                 f"failed: {error} ({where}/{name}.py, line {line})\n")
    # only a module that imported and lacks the name has no f; only one not found is not found
    for spec, text in (("capture_failing_pkg.fine:g", "capture_failing_pkg.fine has no g"),
                       ("capture_failing_pkg.absent:f", "cannot import capture_failing_pkg."
                        "absent (No module named 'capture_failing_pkg.absent'; looked in the "
                        "current directory and on sys.path)")):
        result = invoke("analyze", spec, "--hw", "h100")
        assert result.exit_code == 2 and result.stderr.splitlines() == [
            f"importing {spec} and calling it for its module and inputs ...",
            f"Error: {spec}: {text}"]


def test_an_import_that_exits_is_one_line_and_an_interrupt_not_caught(tmp_path, monkeypatch):
    """A ``sys.exit`` as the module is imported (a script's) ended roofline with its status and
    not a word; it is a CaptureError now. Ctrl-C still stops the run."""
    from roofline.torch import load_factory

    (tmp_path / "capture_exits_example.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "capture_interrupted_example.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CaptureError, match=r"^capture_exits_example:f: importing "
                       r"capture_exits_example called sys.exit\(3\) \(.*capture_exits_"
                       r"example.py, line 2\)"):
        load_factory("capture_exits_example:f")
    with pytest.raises(KeyboardInterrupt):
        load_factory("capture_interrupted_example:f")


def test_compare_captures_a_factory_and_plan_says_it_cannot(invoke, tmp_path, monkeypatch):
    import json

    (tmp_path / "capture_compare_example.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke("compare", "capture_compare_example:batched", "--hw", "a100", "--hw",
                    "h100", "--mode", "inference", "--batch", "64", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # captured at --batch 64 (the factory takes a batch): its one GEMM on each device
    assert data["batch"] == 64 and len(data["gemms"]) == 1
    assert set(data["gemms"][0]["time_s"]) == {"a100-sxm4-80gb", "h100-sxm5-80gb"}
    # plan divides a model's layers over GPUs: a capture has ops, not layers (sweep captures a
    # factory at each batch: tests/test_capture_sweep.py)
    result = invoke("plan", "capture_compare_example:batched", "--hw", "h100", "--gpus", "8")
    assert result.exit_code == 2
    assert result.stderr == ("Error: capture_compare_example:batched: `roofline plan` needs a "
                             "model.yaml or config.json: it divides each layer's heads and FFN "
                             "over the tensor-parallel ranks and runs it at each micro-batch, "
                             "and a captured module holds the ops it ran at its one batch, not "
                             "its layers (analyze, compare and sweep take "
                             "package.module:callable)\n")


def test_a_factory_in_the_current_directory_is_found(invoke, tmp_path, monkeypatch):
    # an installed console script's sys.path lacks the current directory; the factory's module
    # is looked up there first all the same (as python -c would), and sys.path is left as found
    import sys

    (tmp_path / "capture_cwd_example.py").write_text(FACTORY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = list(sys.path)
    result = invoke("analyze", "capture_cwd_example:make", "--hw", "h100", "--mode",
                    "inference", "--format", "json")
    assert result.exit_code == 0, result.output
    assert sys.path == before
    result = invoke("analyze", "capture_no_such_module:make", "--hw", "h100")
    assert result.exit_code == 2
    assert "cannot import capture_no_such_module" in result.stderr
    assert "looked in the current directory and on sys.path" in result.stderr


def test_a_captured_step_is_judged_at_its_own_batch_only(invoke, tmp_path, monkeypatch):
    """A capture exists at one batch: memory counts the activations it held there
    (tests/test_capture_memory.py derives them by hand) and gives no largest batch, and the step
    verdict names the batch instead of judging others."""
    (tmp_path / "capture_factory_example.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = invoke("analyze", "capture_factory_example:make", "--hw", "h100", "--format",
                    "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # stderr: the capture said as it starts
    assert report["memory"]["not_counted"] == []
    assert report["memory"]["max_batch"] is None and report["memory"]["activations"] > 0
    assert report["step"]["min_compute_bound_batch"] is None
    assert report["step"]["captured_batch"] == report["batch"]


# the optimizer's step as torch runs it: two linear layers 64 -> 256 -> 64 with biases,
# 64 x 256 + 256 + 256 x 64 + 64 = 33,088 parameters, fp32 (4 B)
PARAMS = 64 * 256 + 256 + 256 * 64 + 64


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 64))


def _update(optimizer):
    net = capture(_mlp(), torch.zeros(32, 64), mode="train", optimizer=optimizer)
    assert net.parameters == PARAMS == 33_088
    return net, {o.kind: o for o in net.ops() if o.pass_ == "update"}


def test_adam_step_is_recorded_as_torch_runs_it():
    """torch.optim.Adam's default step on the meta device (torch/optim/adam.py,
    _single_tensor_adam, not capturable), per parameter element, each op reading its tensor
    operands and writing its output (values of 4 B):
      exp_avg.lerp_(grad, 1 - beta1)            read m, g; write m          3
      exp_avg_sq.mul_(beta2)                    read v; write v             2
        .addcmul_(grad, grad, 1 - beta2)        read v, g, g; write v       4
      exp_avg_sq.sqrt()                         read v; write a temporary   2
        / bias_correction2_sqrt                 read it; write another      2
        .add_(eps)                              read, write                 2
      param.addcdiv_(exp_avg, denom, -lr_t)     read w, m, denom; write w   4
    19 values a parameter, 76 B, where a fused kernel (roofline's adam-update) moves 28 B
    (read w, g, m, v; write w, m, v: 7 x 4 B); each op 1 FLOP an element (capture's table)."""
    net, ops = _update(torch.optim.Adam)
    per_value = {"aten.lerp_": 3, "aten.mul_": 2, "aten.addcmul_": 4, "aten.sqrt": 2,
                 "aten.div": 2, "aten.add_": 2, "aten.addcdiv_": 4}
    assert {k: o.bytes for k, o in ops.items()} == {k: v * 4 * PARAMS
                                                    for k, v in per_value.items()}
    assert sum(o.bytes for o in ops.values()) == 19 * 4 * PARAMS == 2_514_688
    assert sum(o.flops for o in ops.values()) == 7 * PARAMS
    assert {o.layer for o in ops.values()} == {"optimizer"}
    assert net.optimizer == "adam" and net.uncosted == ()
    # the update is the step's last work, after the backward
    assert [o.pass_ for o in net.ops()][-len(ops):] == ["update"] * len(ops)


def test_adamw_adds_its_decoupled_weight_decay():
    # AdamW (weight_decay 0.01) first scales the weights, param.mul_(1 - lr wd): read w, write
    # w, 2 more values a parameter: 21 x 4 B
    _, ops = _update(torch.optim.AdamW)
    assert sum(o.bytes for o in ops.values()) == 21 * 4 * PARAMS == 2_779_392


def test_sgd_step_is_recorded_as_torch_runs_it():
    # plain SGD: param.add_(grad, alpha=-lr): read w, g; write w: 3 x 4 B = 12 B a parameter,
    # the figure roofline's sgd-update counts
    _, ops = _update(functools.partial(torch.optim.SGD, lr=0.1))
    assert {k: o.bytes for k, o in ops.items()} == {"aten.add_": 3 * 4 * PARAMS}
    # with momentum, from the second step on: buf.mul_(m) (2), buf.add_(grad) (3),
    # param.add_(buf, alpha=-lr) (3): 8 values a parameter
    _, ops = _update(functools.partial(torch.optim.SGD, lr=0.1, momentum=0.9))
    assert {k: o.bytes for k, o in ops.items()} == {"aten.mul_": 2 * 4 * PARAMS,
                                                    "aten.add_": 6 * 4 * PARAMS}


def test_foreach_adam_moves_what_the_loop_moves():
    # foreach=True (torch's default on CUDA) runs the same seven ops as _foreach_ ops over the
    # lists of tensors, the in-place ones returning nothing: still 19 values and 7 FLOPs a
    # parameter, each op's FLOPs summed over its list
    _, ops = _update(functools.partial(torch.optim.Adam, foreach=True))
    assert sorted(ops) == sorted(f"aten._foreach_{op}" for op in (
        "lerp_", "mul_", "addcmul_", "sqrt", "div_", "add_", "addcdiv_"))
    assert sum(o.bytes for o in ops.values()) == 19 * 4 * PARAMS
    assert sum(o.flops for o in ops.values()) == 7 * PARAMS


def test_an_optimizer_instance_is_rebuilt_on_the_meta_parameters():
    module = _mlp()
    adam = torch.optim.Adam(module.parameters(), lr=1e-3)
    net = capture(module, torch.zeros(32, 64), mode="train", optimizer=adam)
    update = [o for o in net.ops() if o.pass_ == "update"]
    assert sum(o.bytes for o in update) == 19 * 4 * PARAMS
    # the user's optimizer and weights are untouched: no state, still on the CPU
    assert not adam.state and all(p.device.type == "cpu" for p in module.parameters())
    # AdamW's defaults hold a setting its constructor does not take: still rebuilt (21 values)
    net = capture(module, torch.zeros(32, 64), mode="train",
                  optimizer=torch.optim.AdamW(module.parameters()))
    assert sum(o.bytes for o in net.ops() if o.pass_ == "update") == 21 * 4 * PARAMS
    # another optimizer asked later replaces the recorded step with its own update op
    other = net.with_overrides(optimizer="sgd")
    assert [(o.kind, o.bytes) for o in other.ops() if o.pass_ == "update"] == [
        ("sgd-update", 12 * PARAMS)]


@pytest.mark.parametrize("optimizer, mode, text", [
    (torch.optim.RMSprop, "train", "optimizer: RMSprop is not modelled"),
    (lambda params: "adam", "train", "the callable must return a torch.optim.Optimizer, got str"),
    (torch.optim.Adam, "inference", "a torch optimizer steps in mode train only"),
    (3, "train", "expected none, sgd, adam or a torch optimizer"),
    (functools.partial(torch.optim.Adam, fused=True), "train",
     r"^Sequential: module 'optimizer': Adam's step failed on the meta device \(RuntimeError: "
     r"`fused=True` requires .*; give it without fused=True \(its eager or foreach step is "
     r"recorded\), or optimizer='adam' or 'sgd' for roofline's fused update op$"),
    ("lion", "train", "optimizer: expected one of none, sgd, adam, got 'lion'"),
])
def test_an_optimizer_capture_cannot_make(optimizer, mode, text):
    with pytest.raises(CaptureError, match=text):
        capture(_mlp(), torch.zeros(32, 64), mode=mode, optimizer=optimizer)


def test_a_factory_with_a_batch_parameter_is_recaptured_at_the_asked_batch(invoke, tmp_path,
                                                                           monkeypatch):
    (tmp_path / "capture_factory_example.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    # Linear(64, 128) at batch 48: the forward GEMM is 48 x 128 x 64
    result = invoke("analyze", "capture_factory_example:batched", "--hw", "h100", "--mode",
                    "inference", "--batch", "48", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["batch"] == 48
    assert [(g["m"], g["n"], g["k"]) for g in data["gemms"]] == [(48, 128, 64)]
    # a factory without one (make) keeps the refusal, one line naming the batch it ran at;
    # so does one that takes a batch and ignores it
    for name in ("make", "ignores"):
        result = invoke("analyze", f"capture_factory_example:{name}", "--hw", "h100",
                        "--batch", "48")
        assert result.exit_code == 2, result.output
        assert "captured at batch 32; a batch of 48 needs a capture with inputs of that batch" \
            in result.stderr and "Traceback" not in result.output


def test_a_view_whose_schema_says_so_moves_nothing():
    # Tensor.unfold is a view (its schema's output aliases self: OpOverload.is_view), as
    # transpose is: the sum over its windows reads the 16 x 64 input's 1,024 fp32 values once
    # (4,096 B), a value each, and writes 16 x 16 (1,024 B); the unfold itself moves nothing
    # (it was counted as a copy, 8,192 B, and named uncosted). Its backward copies the windows'
    # gradients back into the input's shape (UnfoldBackward.cpp: the windows do not overlap,
    # step 4 of size 4): 1,024 read, 1,024 written, no arithmetic.
    class Windows(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(16, 64))

        def forward(self, x):
            return (self.w * x).unfold(1, 4, 4).sum(-1)

    net = capture(Windows(), torch.zeros(16, 64), mode="inference")
    assert [(o.kind, o.bytes) for o in net.ops()] == [("aten.mul", 3 * 1024 * 4),
                                                      ("aten.sum", 1024 * 4 + 256 * 4)]
    assert net.uncosted == ()
    trained = capture(Windows(), torch.zeros(16, 64), mode="train")
    (back,) = [o for o in trained.ops() if o.kind == "aten.unfold_backward"]
    assert (back.bytes, back.flops) == (2 * 1024 * 4, 0) == (8_192, 0)
    assert trained.uncosted == ()


def test_an_in_place_op_that_overwrites_its_tensor_does_not_read_it():
    # a cache of 2 x 8 x 64 x 16 fp32; 4 new positions assigned by slice (cache[:, :, 8:12] = k:
    # copy_ into the slice, whose CUDA kernel reads k and writes the slice): the 2 x 8 x 4 x 16
    # = 1,024 new values read (4,096 B) and written (4,096 B), the slice not read (it was,
    # 4,096 B more); zero_() of a 32 x 64 buffer writes its 2,048 values (8,192 B), no read
    class Write(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("cache", torch.zeros(2, 8, 64, 16))
            self.register_buffer("scratch", torch.zeros(32, 64))

        def forward(self, k):
            self.cache[:, :, 8:12] = k
            self.scratch.zero_()
            return self.cache

    net = capture(Write(), torch.zeros(2, 8, 4, 16), mode="inference")
    assert [(o.kind, o.bytes) for o in net.ops()] == [("aten.copy_", 2 * 1024 * 4),
                                                      ("aten.zero_", 2048 * 4)]


COUNTED = '''
import torch
CALLS = []
def make():
    CALLS.append(1)
    return torch.nn.Linear(64, 128), torch.zeros(32, 64)
'''


def test_analyze_captures_a_factory_once_for_every_device_and_says_so(invoke, tmp_path,
                                                                      monkeypatch):
    """``analyze MODEL --hw a --hw b --hw c`` ran the factory and the capture once a device (a
    70B training step: 14-28 s each, silent); now once, said on stderr as it starts. Its one
    GEMM, 32 x 128 x 64: 2 x 32 x 128 x 64 = 524,288 FLOPs on each device."""
    import json

    (tmp_path / "capture_counted_example.py").write_text(COUNTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import capture_counted_example

    result = invoke("analyze", "capture_counted_example:make", "--hw", "a100", "--hw", "h100",
                    "--hw", "v100", "--mode", "inference", "--format", "json")
    assert result.exit_code == 0, result.output
    assert capture_counted_example.CALLS == [1]
    assert result.stderr == ("importing capture_counted_example:make and calling it for its "
                             "module and inputs ...\n"
                             "capturing capture_counted_example:make (Linear) on the meta "
                             "device, inference...\n")
    reports = json.loads(result.stdout)
    assert [[g["flops"] for g in r["gemms"]] for r in reports] == [[524288]] * 3


class _EmptySlice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 128)

    def forward(self, x):
        return self.fc(x[:0])


def test_an_empty_input_or_slice_is_one_line_not_a_traceback():
    """A batch of 0 (``torch.zeros(0, 64)``) was a ValueError traceback from deep in the
    analysis ("m must be a positive integer, got 0"): the capture refuses it, naming the input;
    a module that multiplies an empty slice is named with its op."""
    with pytest.raises(CaptureError, match=r"^Linear: example input 0 has shape \(0, 64\): a "
                                           r"dimension of 0 holds no values"):
        capture(torch.nn.Linear(64, 128), torch.zeros(0, 64))
    with pytest.raises(CaptureError, match=r"^module 'fc': op aten.addmm multiplies an empty "
                                           r"matrix \(M 0, N 128, K 64\)"):
        capture(_EmptySlice(), torch.zeros(8, 64))
    # a keyword input is named by its keyword
    with pytest.raises(CaptureError, match=r"^Linear: example input 'input' has shape \(0, "
                                           r"64\): a dimension of 0 holds no values"):
        capture(torch.nn.Linear(64, 128), example_kwargs={"input": torch.zeros(0, 64)})
    # an empty depth is no empty batch: the advice names the dimension, not the batch
    with pytest.raises(CaptureError, match=r"^Conv3d: example input 0 has shape \(2, 8, 0, 16, "
                                           r"16\): a dimension of 0 holds no values \(its "
                                           r"dimension 2 is 0: give it 1 or more\)$"):
        capture(torch.nn.Conv3d(8, 16, 3), torch.zeros(2, 8, 0, 16, 16))
    with pytest.raises(CaptureError, match=r"\(give a batch of 1 or more\)$"):
        capture(torch.nn.Conv3d(8, 16, 3), torch.zeros(0, 8, 4, 16, 16))


def test_a_gemm_past_2_to_the_40_is_refused_as_in_a_model_file():
    """The config route refuses batch x seq past 2**40 = 1,099,511,627,776 rows; a capture took
    a GEMM of M = 2**41 = 2,199,023,255,552 rows (a 2**21 x 2**20 input on the meta device,
    nothing allocated) and printed it. Now one line naming the module and op."""
    with pytest.raises(CaptureError, match=r"^the top-level module \(Linear\): op aten.mm "
                                           r"multiplies M 2199023255552, "
                                           r"N 128, K 64 over 1: a dimension past 2\*\*40 = "
                                           r"1099511627776 is out of range") as caught:
        capture(torch.nn.Linear(64, 128, bias=False),
                torch.empty(2**21, 2**20, 64, device="meta"), mode="inference")
    assert caught.value.args[0].count("\n") == 0
