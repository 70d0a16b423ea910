"""Whether a step finds its weights in the cache, or reads them from DRAM at every use.

The GEMM models (``analysis.gpu_gemm`` on a GPU, the calibrated CPU model of
``analysis.predict``) take a GEMM whose working set fits in the last-level cache as
*resident*: its operands cost no DRAM traffic. That is what a timing loop sees, one GEMM
repeated with the same operands (DeepBench, XLA's tables, the probe's own timings, every
measurement those models were fitted or calibrated on), and it is what a step sees when all the
data it keeps fits in the cache: repeated steps find it there.

A network's step does not repeat one GEMM. Between two uses of a weight (one step apart, the
forward pass and its data gradient aside) everything else the step keeps passes through the
cache: when the step keeps more than the cache holds (its weights, KV cache, saved activations,
gradients and optimizer states: ``analysis.memory``'s parts but the workspace allowance), a
weight or the KV cache is read from DRAM at every use, however small the GEMM that reads it.
Llama-2-7B decoding on an H100: each 4096 x 4096 fp16 projection (33.6 MB) fits in the 50 MiB
L2, and the 13.5 GB of weights cycle through it. Such a GEMM is predicted with its kept operand
(``Gemm.kept_operands``: B when it is a weight or the KV cache) read from DRAM, the rest of its
working set (the activation just produced, the output the next op reads) in the cache
(``predict.predict_gemm``'s ``weights_from_dram``). A weight gradient's C, the gradient kept
until the update, is written to DRAM the same way. On the development VM's 2-vCPU EPYC (torch
2.13, fp32), a GEMM that cycled through distinct weights beyond the LLC took 2-2.8x the time of
the same GEMM repeated for M = 1, 1.5-1.9x for M = 4 and 16 (weights of 2.2 and 6.8 MiB) and
1.0-1.2x for M = 64 and 128 (``benchmarks/bench_kept_weights.py``; README, "Weights from DRAM").

Not counted: the activation a weight gradient reads, saved by the forward pass, is read long
after it was written too, but it is small beside the gradient the GEMM writes whenever the
GEMM is memory-bound (its K, the step's tokens, small); attention's saved tensors in the
backward pass of naive attention (flash attention is one op, its bytes all from DRAM) run over
every token, compute-bound at the sizes the benchmarks time. Both stay as the models take them.

Only the standard library is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from ..model.gemm import Gemm
    from .memory import Memory


@dataclass(frozen=True)
class Residency:
    """What one step keeps (bytes) against the cache that would have to hold it."""

    kept_bytes: int  # weights, KV cache, saved activations, gradients, optimizer states
    cache_bytes: int | None  # the last-level cache (a GPU's L2); None: the entry gives none

    @property
    def from_dram(self) -> bool:
        """Whether the step's weights and KV cache are read from DRAM at every use: it keeps
        more than the cache holds."""
        return self.cache_bytes is not None and self.kept_bytes > self.cache_bytes

    def streams(self, gemm: Gemm) -> bool:
        """Whether the step moves ``gemm``'s kept operands (``Gemm.kept_operands``) in DRAM
        though its working set fits in the cache, where a timing loop repeating it finds them
        in the cache: the step keeps more than the cache, and the GEMM fits in it."""
        return (self.from_dram and gemm.kept_bytes > 0
                and gemm.bytes <= (self.cache_bytes or 0))

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``residency`` object."""
        return {"kept_bytes": self.kept_bytes, "cache_bytes": self.cache_bytes,
                "weights_from_dram": self.from_dram}


def residency_of(memory: Memory, hardware: HardwareSpec) -> Residency:
    """The step's residency on ``hardware``: every memory part but the workspace allowance
    against ``llc_mb``."""
    kept = memory.total_bytes - memory.parts.get("workspace", 0)
    cache = round(hardware.llc_mb * 2**20) if hardware.llc_mb else None
    return Residency(kept, cache)
