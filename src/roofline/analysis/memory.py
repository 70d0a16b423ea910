"""Device memory a step needs, part by part, against the device's capacity.

Parts (bytes, per device):

- ``weights``: the matrices a weight format stores (``model.quantized.format_matrices``: what
  GEMMs read as B, ``matrix_parameters``, but an LM head and a router vLLM keeps unquantized)
  as stored (``weights``: int4 is half a byte per value plus one fp16 scale per ``group_size``
  values), every other parameter (norms, biases, embeddings, the LM head) at the model's
  dtype, and, with MLA's ``kv_b`` in a format, the 16-bit W_UK and W_UV vLLM keeps beside it
  (``model.quantized.dequantized_copies``). Llama-2-7B in fp16: 6,738,415,616 x 2 =
  13,476,831,232 B. A training step keeps all at the model's dtype.
- The KV cache is stored at ``kv_cache``'s size (default the model's dtype).
- ``kv_cache`` (inference): per attention block 2 x kv_heads x head_dim x seq x batch elements
  (Llama-2-7B in fp16: 32 blocks x 2 x 32 x 128 x 2 B = 0.5 MiB per token).
- ``activations``: inference, the most one layer holds at once (``live_bytes``; the peak of a
  forward pass that frees each layer's inputs once it has run); training, everything the forward
  pass keeps for the backward pass (``saved_bytes``, by ``recompute``: Korthikanti et al.'s
  per-layer counts, see ``model.layers.transformer``; the forward work it runs again is timed
  in ``analysis.recompute``), plus the logits the loss reads (the last layer's output), plus
  with full recomputation one block's saved tensors while it is recomputed. A captured
  module: the most its tensors held at once beyond its parameters, as the capture's run
  allocated and freed them (``model.capture_memory``), less its gradients.
- ``gradients`` (training): one per parameter at the weight-gradient buffer's size
  (``grad_accumulation``, else the model's dtype).
- ``optimizer`` (training): fp32 states, as the update op counts them: Adam's two moments (8 B
  per parameter) and, when the weights are narrower than fp32, an fp32 master copy (4 B); SGD
  the master copy only. Mixed-precision Adam: 2 + 2 + 12 = 16 B per parameter (ZeRO, Rajbhandari
  et al., 2020). A captured torch optimizer: the states its first step made, as torch keeps
  them (AdamW's two moments at the parameters' dtype, no master copy).
- ``workspace``: on a GPU ``WORKSPACE_BYTES``, a stated allowance for the CUDA context, library
  workspaces and allocator slack (not measured); on a CPU none (no CUDA context; the process's
  own memory is not counted).

Against ``HardwareSpec.memory_capacity_bytes`` (CUDA's report where the entry records one, else
the datasheet's GB as 10^9 B: ``capacity_basis`` says which): ``fits``, the largest batch that
fits at this sequence length (every part is affine in the batch: found in closed form and
checked) and the largest sequence length that fits at this batch (a bisection; at most the
model's context).
A device without a stated capacity (a CPU entry) gets None for all three.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..files.numbers import MAX_INT
from ..hardware.spec import HardwareSpec
from ..model.dtypes import SCALE_BYTES, bits, itemsize
from ..model.layers import kv_cache_bytes, live_bytes, saved_bytes
from ..model.network import Network
from ..model.quantized import dequantized_copies, format_matrices

#: The stated allowance for what a step needs beyond its tensors: the CUDA context (about
#: 0.3-0.5 GB), cuBLAS and attention workspaces, allocator fragmentation. A round figure.
WORKSPACE_BYTES = 10**9
MASTER_BYTES = 4  # fp32 master weights and optimizer states
#: Optimizer states per parameter besides the master copy: Adam's two fp32 moments.
OPTIMIZER_STATE_BYTES = {"none": 0, "sgd": 0, "adam": 8}
PARTS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "workspace")


@dataclass(frozen=True)
class Memory:
    """One step's memory by part (bytes), the device's capacity and what fits."""

    parts: dict[str, int]  # PARTS -> bytes
    capacity_bytes: int | None  # None: the entry states no capacity
    max_batch: int | None = None  # the largest batch that fits at this seq (0: none does)
    max_seq: int | None = None  # the largest seq that fits at this batch (0: none does)
    seq_limit: str = ""  # "context" when max_seq is the model's context, not the memory
    not_counted: tuple[str, ...] = ()  # parts left at 0 because nothing says what they hold
    #: where the capacity comes from (``HardwareSpec.memory_capacity_basis``): "cuda",
    #: "probe" or "datasheet"; None without a capacity
    capacity_basis: str | None = None
    #: of ``weights``, the bytes of MLA's 16-bit W_UK and W_UV that vLLM keeps beside a
    #: ``kv_b`` stored in a weight format (``model.quantized.dequantized_copies``), said with
    #: the weights; not a part of its own
    dequantized_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(self.parts.values())

    @property
    def weights(self) -> int:
        return self.parts["weights"]

    @property
    def kv_cache(self) -> int:
        return self.parts["kv_cache"]

    @property
    def activations(self) -> int:
        return self.parts["activations"]

    @property
    def gradients(self) -> int:
        return self.parts["gradients"]

    @property
    def optimizer(self) -> int:
        return self.parts["optimizer"]

    @property
    def workspace(self) -> int:
        return self.parts["workspace"]

    @property
    def fits(self) -> bool | None:
        """Whether the step fits in the device's memory (None: no capacity stated)."""
        return None if self.capacity_bytes is None else self.total_bytes <= self.capacity_bytes

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``memory`` object: each part in bytes, the total, the capacity and where it
        comes from, whether it fits, the largest batch (at this seq) and seq (at this batch)
        that fit."""
        return dict(self.parts) | {"total_bytes": self.total_bytes,
                             "capacity_bytes": self.capacity_bytes,
                             "capacity_basis": self.capacity_basis, "fits": self.fits,
                             "max_batch": self.max_batch, "max_seq": self.max_seq,
                             "not_counted": list(self.not_counted)}


def memory_parts(network: Network, workspace: int = WORKSPACE_BYTES,
                 kv_copies: int = 1) -> dict[str, int]:
    """The step's memory by part (see the module docstring), in bytes; ``kv_copies``: the
    batches whose KV cache the device holds at once (a pipeline stage's in-flight batches,
    ``analysis.serving_pp``; 1 otherwise)."""
    net = network
    batch, dtype = net.settled()
    e = itemsize(dtype)
    step = net.step()
    parameters = net.parameters
    runs = net.layer_runs
    # layers alike (a repeat's copies, layers of the same fields) hold the same: each counted
    # once, times its copies (Network.layer_groups)
    groups = net.layer_groups()
    # the matrices --weights stores, the rest at the model's dtype (model.quantized)
    matrices = format_matrices(net)
    stored = net.weight_dtype if net.mode != "train" else dtype
    weights = -(-matrices * bits(stored) // 8) + (parameters - matrices) * e
    weights += dequantized_copies(net) * e  # MLA's W_UK and W_UV beside a quantized kv_b
    if net.group and net.mode != "train":  # one fp16 scale per group of each column
        weights += matrices // net.group * SCALE_BYTES
    parts = dict.fromkeys(PARTS, 0) | {"weights": weights, "workspace": workspace}
    if net.mode != "train":
        parts["kv_cache"] = kv_copies * sum(kv_cache_bytes(layer, step) * count
                                            for count, layer in groups)
        last = net.last_step()
        parts["activations"] = max(
            [live_bytes(layer, step) for _, layer in net.layer_groups(but_last=True)]
            + [live_bytes(runs[-1].layer, step)] * (runs[-1].count > 1)
            + [live_bytes(runs[-1].layer, last)])
        if net.captured_live is not None:
            parts["activations"] = _captured(net.captured_live, e, 0)
        return parts
    saved = [saved_bytes(layer, step, net.recompute) for _, layer in groups]
    last_layer = runs[-1].layer
    logits = step.tokens * (last_layer.out_width or 0) * e  # what the loss reads
    working = 0
    if net.recompute == "full":  # one block's tensors while it is recomputed
        working = max(saved_bytes(layer, step, "none") - kept
                      for (_, layer), kept in zip(groups, saved))
    parts["activations"] = sum(kept * count for (count, _), kept in zip(groups, saved)) + (
        logits + working)
    grad_e = itemsize(net.grad_accumulation) if net.grad_accumulation else e
    parts["gradients"] = parameters * grad_e
    parts["optimizer"] = optimizer_bytes(parameters, e, net.optimizer)
    if net.captured_live is not None:
        parts["activations"] = _captured(net.captured_live, e, parts["gradients"])
    if net.captured_optimizer is not None:  # the states torch made, not mixed precision's
        parts["optimizer"] = _captured(net.captured_optimizer, e, 0)
    return parts


def optimizer_bytes(parameters: int, e: int, optimizer: str) -> int:
    """The optimizer's fp32 states for ``parameters`` weights of ``e`` bytes: its moments
    (``OPTIMIZER_STATE_BYTES``) and, when the weights are narrower than fp32, a master copy
    (``MASTER_BYTES``); nothing without an optimizer. Adam on bf16 weights: 8 + 4 = 12 B a
    parameter."""
    if optimizer == "none":
        return 0
    master = MASTER_BYTES if e < MASTER_BYTES else 0
    return parameters * (OPTIMIZER_STATE_BYTES[optimizer] + master)


def optimizer_left_out(network: Network) -> int | None:
    """The bytes mixed-precision Adam's states would add to a training step that counts no
    optimizer (``optimizer: none``, the default of a config.json), so that a memory verdict
    without them is not read as a training run's; None for any other step (inference, an
    optimizer given, a captured torch optimizer's own states)."""
    net = network
    if net.mode != "train" or net.optimizer != "none" or net.captured_optimizer is not None:
        return None
    return optimizer_bytes(net.parameters, itemsize(net.settled()[1]), "adam")


def _captured(live: tuple[int, int], e: int, gradients: int) -> int:
    """A captured step's activations: the most its tensors held at once beyond its parameters
    (``model.capture_memory``: elements of the model's dtype at ``e`` bytes, other bytes as
    they are), less the gradients memory counts apart (held at the end of the backward, so
    never more than that peak)."""
    elements, other = live
    return max(0, elements * e + other - gradients)


def _total(network: Network, workspace: int, kv_copies: int = 1) -> int:
    return sum(memory_parts(network, workspace, kv_copies).values())


def memory_of(network: Network, hardware: HardwareSpec, workspace: int | None = None,
              kv_copies: int = 1) -> Memory:
    """The step's memory on ``hardware``: its parts, and against the capacity, the largest
    batch and sequence length that fit. ``workspace``: by default ``WORKSPACE_BYTES`` on a GPU,
    0 on a CPU (module docstring); ``kv_copies`` as ``memory_parts``'s (the batch that fits is
    then each copy's)."""
    if workspace is None:
        workspace = WORKSPACE_BYTES if hardware.kind == "gpu" else 0
    parts = memory_parts(network, workspace, kv_copies)
    copies = dequantized_copies(network) * itemsize(network.operand_dtype)
    # a captured module exists at one batch and seq (its activations recorded there, where the
    # capture kept them: ``Network.captured_live``)
    captured = network.captured_batch is not None
    unknown = ("activations",) if captured and network.captured_live is None else ()
    if hardware.memory_capacity_bytes is None:
        return Memory(parts, capacity_bytes=None, not_counted=unknown,
                      dequantized_bytes=copies)
    capacity, basis = round(hardware.memory_capacity_bytes), hardware.memory_capacity_basis
    if captured:
        return Memory(parts, capacity_bytes=capacity, not_counted=unknown,
                      capacity_basis=basis, dequantized_bytes=copies)
    max_seq, limit = _max_seq(network, capacity, workspace, kv_copies)
    return Memory(parts, capacity_bytes=capacity,
                  max_batch=max_batch(network, capacity, workspace, kv_copies), max_seq=max_seq,
                  seq_limit=limit, capacity_basis=basis, dequantized_bytes=copies)


def max_batch(network: Network, capacity: float, workspace: int = WORKSPACE_BYTES,
              kv_copies: int = 1) -> int:
    """The largest batch whose step fits in ``capacity`` bytes (0: not even batch 1).

    Every part is a + b x batch (weights and optimizer states fixed; the KV cache and the
    activations proportional to the batch), so B = floor((capacity - a) / b), then checked
    against the parts themselves (a step or two, for rounding)."""
    def total(batch: int) -> int:
        return _total(replace(network, batch=batch), workspace, kv_copies)

    one, two = total(1), total(2)
    if one > capacity:
        return 0
    per = two - one
    if per <= 0:
        return MAX_INT
    batch = min(MAX_INT, max(1, int((capacity - (one - per)) // per)))
    while batch > 1 and total(batch) > capacity:
        batch -= 1
    while batch < MAX_INT and total(batch + 1) <= capacity:
        batch += 1
    return batch


def _max_seq(network: Network, capacity: float, workspace: int,
             kv_copies: int = 1) -> tuple[int | None, str]:
    """The largest seq whose step fits at the network's batch (None for a model without a
    sequence), bisected up to the model's context (``"context"`` when that is the limit)."""
    if network.seq is None:
        return None, ""

    def fits(seq: int) -> bool:
        return _total(replace(network, seq=seq), workspace, kv_copies) <= capacity

    high = network.context or MAX_INT
    if fits(high):
        return high, "context" if network.context else ""
    low = 0  # fits(low) holds (or low is 0); fits(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low, ""
