"""A captured module's untied LM head under a weight format: found as model.yaml's is, a matrix
whose rows are the vocabulary of the table its embedding gathers from (``model.lm_head``), and
left at the model's dtype, its weights and its GEMM, as vLLM serves a ``ParallelLMHead``
(``model.quantized``). Worked by hand from the shapes.

Needs torch (the `torch` extra; .ci/run installs it)."""

from __future__ import annotations

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.api import analyze_model  # noqa: E402
from roofline.torch import capture  # noqa: E402


class UntiedLM(torch.nn.Module):
    """A bf16 token embedding (1000 x 64), a 64 x 64 projection and an untied LM head
    (64 -> 1000), no biases."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(1000, 64)
        self.fc = torch.nn.Linear(64, 64, bias=False)
        self.head = torch.nn.Linear(64, 1000, bias=False)

    def forward(self, ids):
        return self.head(self.fc(self.embed(ids)))


class Classifier(torch.nn.Module):
    """BERT's shape in small: a token table (1000 x 64), a 2-row token-type table, and a
    2-label classifier (64 -> 2), whose rows match the token types', not the vocabulary."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(1000, 64)
        self.types = torch.nn.Embedding(2, 64)
        self.classifier = torch.nn.Linear(64, 2, bias=False)

    def forward(self, ids, types):
        return self.classifier(self.embed(ids) + self.types(types))


def _ids():
    return torch.zeros(2, 4, dtype=torch.long)


def test_an_untied_head_is_read_at_the_models_dtype_under_int8():
    """8 tokens. Parameters: the table 64,000, the projection 4,096, the head 64,000: 132,096.
    Under int8 weights only the projection's 4,096 take 1 B; the table and the head stay at
    bf16's 2 B: 4,096 + 2 x 128,000 = 260,096 B (the head at 1 B would make it 196,096). The
    head's GEMM, 8 x 1000 x 64, reads its bf16 B, 64 x 1000 x 2 = 128,000 B, and computes in
    bf16; the projection's reads its int8 B, 64 x 64 x 1 = 4,096 B."""
    net = capture(UntiedLM().to(torch.bfloat16), _ids(), mode="inference")
    assert net.parameters == 132_096
    kinds = {g.layer: g.b_operand for g in net.gemms()}
    assert kinds == {"fc": "weight", "head": "unquantized"}
    report = analyze_model(net, "h100", weights="int8")
    assert report.memory.weights == 4_096 + 2 * 128_000 == 260_096
    head = next(r.gemm for r in report.results if r.gemm.layer == "head")
    assert (head.dtype, head.stored_b, head.dequant_flops) == ("bf16", "bf16", 0)
    assert head.bytes_by_operand["b"] == 128_000
    fc = next(r.gemm for r in report.results if r.gemm.layer == "fc")
    assert (fc.stored_b, fc.bytes_by_operand["b"]) == ("int8", 4_096)


def test_the_precision_line_names_a_captured_head():
    net = capture(UntiedLM().to(torch.bfloat16), _ids(), mode="inference")
    from roofline.output.precision import precision_text

    text = precision_text(net.with_overrides(weights="int4", group_size=32))
    assert ("weights int4-g32 (fp16 scales) x activations bf16 -> C bf16; embedding and LM "
            "head bf16 (vLLM quantizes neither); rest bf16") == text


def test_a_classifier_over_as_many_labels_as_token_types_is_no_lm_head():
    """The vocabulary is the largest table's rows (1000), not the token types' (2): the 2 x 64
    classifier stays a matrix the format stores, 128 B at int8, while both tables (64,000 +
    128 values) stay at 2 B: 128 + 2 x 64,128 = 128,384 B."""
    net = capture(Classifier().to(torch.bfloat16), _ids(), _ids() % 2, mode="inference")
    assert {g.layer: g.b_operand for g in net.gemms()} == {"classifier": "weight"}
    assert analyze_model(net, "h100", weights="int8").memory.weights == 128 + 2 * 64_128
