"""An op a model's code runs in a wider dtype than the model's own (an upcast: ``logits.float()``
before a loss in a bf16 model, Llama's RMSNorm in fp32) moves that dtype's bytes. The capture
counts each tensor at its own element size where it is not the model's, keeps it so under a
dtype override, and names the op's dtype; worked out by hand from the shapes, never from the
code's own output.

Needs torch (the `torch` extra; .ci/run installs it)."""

from __future__ import annotations

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roofline.api import analyze_model  # noqa: E402
from roofline.torch import capture  # noqa: E402

N, V = 8, 1000  # 2 x 4 tokens over a vocabulary of 1000
TARGETS = N * 8  # int64 labels


class UpcastLM(torch.nn.Module):
    """An embedding, an LM head and the loss as Hugging Face's causal LMs compute it: on the
    logits cast to fp32 (``ForCausalLMLoss``: ``logits = logits.float()``)."""

    def __init__(self, upcast: bool = True):
        super().__init__()
        self.embed = torch.nn.Embedding(V, 16)
        self.head = torch.nn.Linear(16, V, bias=False)
        self.upcast = upcast

    def forward(self, tokens, labels):
        logits = self.head(self.embed(tokens))
        if self.upcast:
            logits = logits.float()
        return F.cross_entropy(logits.view(-1, V), labels.view(-1))


def _tokens():
    return torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long)


def _ops(net, dtype=None):
    """(pass, kind) -> (bytes, dtype) of the ops the report on an H100 lists."""
    report = analyze_model(net, "h100", dtype=dtype)
    return {(o.op.pass_, o.op.kind): (o.op.bytes, o.dtype) for o in report.ops}


def test_the_loss_on_upcast_logits_moves_fp32_bytes_in_a_bf16_model():
    net = capture(UpcastLM().to(torch.bfloat16), *_tokens(), mode="train")
    assert net.dtype == "bf16"
    ops = _ops(net)
    values = N * V  # 8,000 logits
    # the cast reads 8,000 bf16 logits (2 B) and writes them in fp32 (4 B): 48,000 B; it was
    # counted 32,000 (both at 2 B) before
    assert ops["forward", "aten._to_copy"] == (values * 2 + values * 4, "fp32") == (48_000,
                                                                                   "fp32")
    # the log-softmax reads and writes 8,000 fp32 values: 64,000 B (32,000 before)
    assert ops["forward", "aten._log_softmax"] == (2 * values * 4, "fp32")
    # the loss gathers a fp32 log-probability per target, reads the int64 targets, writes the
    # fp32 loss and total_weight: 32 + 64 + 8 = 104 B
    assert ops["forward", "aten.nll_loss_forward"] == (N * 4 + TARGETS + 2 * 4, "fp32")
    # backward: the fp32 gradient written (32,000 B), output gradient and total_weight read,
    # the targets: 32,072 B
    assert ops["backward", "aten.nll_loss_backward"] == (values * 4 + 2 * 4 + TARGETS, "fp32")
    # the log-softmax backward reads the gradient and the log-probabilities, writes dX: fp32
    assert ops["backward", "aten._log_softmax_backward_data"] == (3 * values * 4, "fp32")
    # the cast's backward reads the fp32 gradient and writes it in bf16, the model's dtype
    assert ops["backward", "aten._to_copy"] == (values * 4 + values * 2, "bf16")
    # the embedding, in the model's dtype, is as it was: 8 rows of 16 bf16 values read and
    # written, the int64 tokens
    assert ops["forward", "aten.embedding"] == (2 * N * 16 * 2 + TARGETS, "bf16")


def test_a_dtype_override_moves_the_models_values_and_leaves_the_upcast_ones():
    net = capture(UpcastLM().to(torch.bfloat16), *_tokens(), mode="train")
    values = N * V
    as_fp32 = _ops(net, dtype="fp32")
    # the cast's bf16 side follows the override to 4 B; its fp32 output stays 4 B
    assert as_fp32["forward", "aten._to_copy"] == (values * 4 + values * 4, "fp32")
    assert as_fp32["forward", "aten._log_softmax"] == (2 * values * 4, "fp32")
    assert as_fp32["forward", "aten.embedding"] == (2 * N * 16 * 4 + TARGETS, "fp32")
    as_fp16 = _ops(net, dtype="fp16")
    # fp16 has bf16's size: the model's values as they were, the upcast ones still fp32
    assert as_fp16["forward", "aten._to_copy"] == (values * 2 + values * 4, "fp32")
    assert as_fp16["forward", "aten._log_softmax"] == (2 * values * 4, "fp32")
    assert as_fp16["forward", "aten.embedding"] == (2 * N * 16 * 2 + TARGETS, "fp16")


def test_an_upcast_op_is_priced_as_the_same_op_in_an_fp32_model():
    """Two routes to one op: the fp32 log-softmax of a bf16 model's upcast logits, and the same
    log-softmax in a model that is fp32 throughout, on the same GPU: the same bytes, the same
    kernel (torch picks it by the element size), the same predicted time."""
    upcast = _report_ops(capture(UpcastLM().to(torch.bfloat16), *_tokens(), mode="train"))
    plain = _report_ops(capture(UpcastLM(upcast=False), *_tokens(), mode="train"))
    for key in [("forward", "aten._log_softmax"), ("forward", "aten.nll_loss_forward"),
                ("backward", "aten.nll_loss_backward"),
                ("backward", "aten._log_softmax_backward_data")]:
        assert upcast[key] == plain[key], key


def _report_ops(net):
    report = analyze_model(net, "h100")
    return {(o.op.pass_, o.op.kind): (o.op.bytes, o.dtype, o.predicted_time_s,
                                      o.predicted_basis) for o in report.ops}


class RMSNorm(torch.nn.Module):
    """Llama's RMSNorm as Hugging Face writes it: the statistics in fp32, the result cast back
    to the input's dtype before the weight (``LlamaRMSNorm.forward``)."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))

    def forward(self, x):
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + 1e-6)
        return self.weight * h.to(x.dtype)


def test_rmsnorm_in_fp32_inside_a_bf16_model_moves_fp32_bytes():
    net = capture(RMSNorm(16).to(torch.bfloat16), torch.zeros(2, 4, 16, dtype=torch.bfloat16),
                  mode="inference")
    x, rows = 2 * 4 * 16, 2 * 4  # 128 values in 8 rows of 16
    ops = [(o.op.kind, o.op.bytes, o.dtype) for o in analyze_model(net, "h100").ops]
    assert ops == [
        ("aten._to_copy", x * 2 + x * 4, "fp32"),  # bf16 read, fp32 written: 768 B
        ("aten.pow", 2 * x * 4, "fp32"),  # h read, h^2 written: 1,024 B
        ("aten.mean", x * 4 + rows * 4, "fp32"),  # 128 values read, 8 means written: 544 B
        ("aten.add", 2 * rows * 4, "fp32"),  # variance + eps: 64 B
        ("aten.rsqrt", 2 * rows * 4, "fp32"),  # 64 B
        ("aten.mul", 2 * x * 4 + rows * 4, "fp32"),  # h and the 8 scales read, h written
        ("aten._to_copy", x * 4 + x * 2, "bf16"),  # fp32 read, bf16 written: 768 B
        ("aten.mul", 16 * 2 + 2 * x * 2, "bf16"),  # the weight, h read, the output written
    ]
    # before, every value was counted at the model's 2 B: 2,944 B in all where they are 4,832
    assert sum(b for _, b, _ in ops) == 4_832


def test_a_model_in_one_dtype_names_no_op_of_its_own():
    net = capture(UpcastLM(upcast=False).to(torch.bfloat16), *_tokens(), mode="train")
    assert {o.dtype for o in net.ops()} == {""}
    report = analyze_model(net, "h100")
    assert {o.dtype for o in report.ops} == {"bf16"}
    assert {op["dtype"] for op in report.to_dict()["ops"]} == {"bf16"}


class PlainWeights(torch.nn.Module):
    """A step whose weights are plain bf16 tensors on the meta device, as a hand-written decode
    step keeps them (no parameter, buffer or floating-point input: its dtype follows from its
    GEMMs), with Llama's RMSNorm statistics in fp32."""

    def __init__(self):
        super().__init__()
        self.table = torch.empty(100, 16, dtype=torch.bfloat16, device="meta")
        self.norm = torch.empty(16, dtype=torch.bfloat16, device="meta")
        self.w = torch.empty(32, 16, dtype=torch.bfloat16, device="meta")

    def forward(self, ids):
        x = F.embedding(ids, self.table)
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return F.linear(self.norm * h.to(x.dtype), self.w)


def test_a_model_whose_dtype_follows_from_its_gemms_counts_its_upcasts_too():
    net = capture(PlainWeights(), torch.zeros(2, 4, dtype=torch.long), mode="inference")
    assert net.dtype == "bf16"
    x = 2 * 4 * 16  # 128 values
    ops = {(o.kind, o.bytes, o.dtype) for o in net.ops()}
    assert ("aten.pow", 2 * x * 4, "fp32") in ops  # fp32, not the 2 B of the model's values
    assert ("aten._to_copy", x * 2 + x * 4, "fp32") in ops
    assert ("aten._to_copy", x * 4 + x * 2, "") in ops
