"""What roofline.torch.capture counts for a training step's dropout: the one fused kernel torch's
CUDA runs, not the three passes its CPU path (and the meta device) decomposes it into. Worked out
by hand from the shapes, never from the code's own output.

``F.dropout`` in training with 0 < p < 1 runs ``at::native_dropout`` on a CUDA tensor
(aten/src/ATen/native/Dropout.cpp, ``dropout``: ``is_fused_kernel_acceptable``), one kernel that
reads x and writes y and a one-byte boolean mask (cuda/Dropout.cu, ``dropout_cuda``); its backward
reads dY and the mask and writes dX (``native_dropout_backward_cuda``, ``masked_scale_kernel``).
On any other tensor (the meta device's too) ``_dropout_impl`` runs: ``empty_like(x).bernoulli_``,
``noise.div_(1 - p)``, ``x * noise``, and the backward ``dY * noise``: 9 values a value where the
fused kernel moves 4 and a byte. ``F.dropout(inplace=True)`` takes ``_dropout_impl`` on CUDA too.

Needs torch (the `torch` extra; .ci/run installs it)."""

from __future__ import annotations

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.torch import capture  # noqa: E402

BATCH, WIDTH = 32, 256
VALUES = BATCH * WIDTH  # 8,192 values dropped out


def _dropout_ops(net):
    """(kind, pass, bytes) of every op but the Linear's (its GEMMs, bias add and bias gradient)."""
    return [(o.kind, o.pass_, o.bytes) for o in net.ops()
            if o.kind not in ("bias", "aten.sum")]


def _model(inplace=False):
    return torch.nn.Sequential(torch.nn.Linear(64, WIDTH), torch.nn.Dropout(0.1, inplace=inplace))


def test_a_training_dropout_is_the_fused_kernel_and_its_backward():
    net = capture(_model(), torch.zeros(BATCH, 64), mode="train")
    # forward: x read (8,192 x 4 B), y written (8,192 x 4 B), the boolean mask written
    # (8,192 x 1 B): 73,728 B. Backward: dY read, the mask read, dX written: 73,728 B. (The
    # decomposition counted bernoulli_ 65,536, div_ 65,536 and mul 98,304 forward, mul 98,304
    # backward: 327,680 B against 147,456.)
    assert _dropout_ops(net) == [
        ("aten.native_dropout", "forward", VALUES * (4 + 4 + 1)),
        ("aten.native_dropout_backward", "backward", VALUES * (4 + 1 + 4))]
    assert VALUES * 9 == 73_728
    assert net.uncosted == ()


def test_a_bf16_dropout_moves_2_byte_values_and_a_1_byte_mask():
    net = capture(_model(), torch.zeros(BATCH, 64), mode="train", dtype="bf16")
    # x, y (and dY, dX) at 2 B, the mask at 1 B whatever the model's dtype: 5 B a value each way
    assert [b for _, _, b in _dropout_ops(net)] == [VALUES * 5, VALUES * 5] == [40_960, 40_960]


def test_inference_runs_no_dropout():
    net = capture(_model(), torch.zeros(BATCH, 64), mode="inference")
    assert _dropout_ops(net) == []


def test_an_in_place_dropout_runs_torchs_decomposition_on_cuda_too():
    # dropout_ never takes the fused kernel (Dropout.cpp: ``_dropout<true>``): its noise drawn,
    # scaled and multiplied into x in place; recorded as torch runs it
    net = capture(_model(inplace=True), torch.zeros(BATCH, 64), mode="train")
    kinds = [k for k, _, _ in _dropout_ops(net)]
    assert "aten.native_dropout" not in kinds
    assert kinds[:3] == ["aten.bernoulli_", "aten.div_", "aten.mul_"]
