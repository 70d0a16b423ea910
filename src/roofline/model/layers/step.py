"""What a layer needs to know about the step it runs in: batch, tokens per sample, phase."""

from __future__ import annotations

from dataclasses import dataclass

PHASES = ("train", "prefill", "decode")


@dataclass(frozen=True)
class Step:
    """One step: ``batch`` samples of ``seq`` tokens each (None: no sequence), in ``phase``.

    ``train`` and ``prefill`` process every token; ``decode`` one new token per sequence
    against a KV cache of ``seq`` tokens. ``e`` is the activation element size in bytes;
    ``e_kv`` the KV cache's (0: ``e``).
    """

    batch: int
    seq: int | None
    phase: str
    e: int
    e_kv: int = 0

    @property
    def kv_e(self) -> int:
        """Bytes per KV-cache element: ``e_kv``, else the activations' ``e``."""
        return self.e_kv or self.e

    @property
    def per_sample(self) -> int:
        """Rows each sample contributes to a per-token GEMM: seq, or 1 (decode, no seq)."""
        return 1 if self.phase == "decode" or self.seq is None else self.seq

    @property
    def tokens(self) -> int:
        """Rows of every per-token GEMM: batch x seq, batch in decode or without a seq."""
        return self.batch * self.per_sample

    @property
    def row_role(self) -> str:
        return "tokens" if self.per_sample > 1 else "batch"
