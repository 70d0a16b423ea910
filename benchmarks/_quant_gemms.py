"""Quantized GEMMs as PyTorch runs them on a GPU, for gpu_measure.py's ``quant`` part (only torch
is imported, and only by the caller): what a user of torch gets for weight-only and int8 GEMMs.

- ``w4a16``: ``torch.ops.aten._weight_int4pack_mm`` (the "tinygemm" kernel torchao and gpt-fast
  run for int4 weight-only): bf16 activations x int4 weights packed by
  ``_convert_weight_to_int4pack`` (inner k tiles 8), a bf16 scale and zero point per ``group``
  values of each output column; bf16 out.
- ``w8a16``: ``torch.ops.aten._weight_int8pack_mm``: bf16 activations x int8 weights (N x K), one
  bf16 scale per output column; bf16 out (where this torch build has a CUDA kernel for it).
- ``int8``: ``torch._int_mm``: int8 x int8 -> int32 through cuBLASLt, B column-major (a
  Linear's weight, N x K), M > 16 and N, K multiples of 8 (its rules).
- ``bf16``: ``F.linear(x, W)`` in bf16 on the same shapes, the dense baseline in the same run.

Rows: ``kind``, ``m``, ``n``, ``k``, ``group`` (w4a16; 0 else), best / median / spread per call,
``error`` where a kernel refused the shape.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Llama-2-7B's weight GEMMs (n, k: the fused q/k/v, the MLP's gate or up, its down
#: projection, the LM head) at these tokens m: decode batches up to a prefill
LLAMA_NK = ((12288, 4096), (11008, 4096), (4096, 11008), (32000, 4096))
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)
GROUPS = (32, 64, 256)  # w4a16 group sizes beside 128, at GROUP_TOKENS
GROUP_TOKENS = (1, 16, 128)
INNER_K_TILES = 8


def weight_only(torch: Any, kind: str, m: int, n: int, k: int, group: int,
                dev: str) -> Callable[[], object]:
    """One weight-only or dense GEMM of (m, k) activations and an (n, k) weight."""
    import torch.nn.functional as F

    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    if kind == "bf16":
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        return lambda: F.linear(x, w)
    if kind == "w8a16":
        w8 = torch.randint(-128, 128, (n, k), device=dev, dtype=torch.int8)
        scales = torch.rand(n, device=dev, dtype=torch.bfloat16)
        return lambda: torch.ops.aten._weight_int8pack_mm(x, w8, scales)
    packed_u8 = torch.randint(0, 256, (n, k // 2), device=dev, dtype=torch.uint8)
    w4 = torch.ops.aten._convert_weight_to_int4pack(packed_u8, INNER_K_TILES)
    sz = torch.rand(k // group, n, 2, device=dev, dtype=torch.bfloat16)
    return lambda: torch.ops.aten._weight_int4pack_mm(x, w4, group, sz)


def int8_mm(torch: Any, m: int, n: int, k: int, dev: str) -> Callable[[], object]:
    a = torch.randint(-128, 128, (m, k), device=dev, dtype=torch.int8)
    b = torch.randint(-128, 128, (n, k), device=dev, dtype=torch.int8).t()
    return lambda: torch._int_mm(a, b)


def quant_shapes(deepbench: list[tuple[int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """(kind, m, n, k, group) rows to time."""
    rows: list[tuple[str, int, int, int, int]] = []
    for n, k in LLAMA_NK:
        for m in TOKENS:
            rows += [("bf16", m, n, k, 0), ("w4a16", m, n, k, 128), ("w8a16", m, n, k, 0)]
            if m > 16:
                rows.append(("int8", m, n, k, 0))
            if m in GROUP_TOKENS:
                rows += [("w4a16", m, n, k, g) for g in GROUPS]
    rows += [("int8", m, n, k, 0) for m, n, k in deepbench
             if m > 16 and n % 8 == 0 and k % 8 == 0]
    return list(dict.fromkeys(rows))


def measure_quant(torch: Any, out: Path, entry: str, time_calls: Callable[..., dict[str, float]],
                  deepbench: list[tuple[int, int, int]], dev: str, quick: bool,
                  log: Callable[[str], None]) -> None:
    """quant.csv: every ``quant_shapes`` row timed by ``time_calls``; a kind whose kernel is
    missing here is tried once per shape and its error recorded."""
    rows = quant_shapes(deepbench)
    if quick or dev != "cuda":
        rows = [r for r in rows if r[1] in (1, 32) and r[2] == 4096] + rows[-3:]
    fields = ["device", "kind", "m", "n", "k", "group", "time_ms", "median_ms", "spread",
              "error"]
    missing: dict[str, str] = {}
    with open(out / "quant.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for i, (kind, m, n, k, group) in enumerate(rows):
            row: dict[str, Any] = {"device": entry, "kind": kind, "m": m, "n": n, "k": k,
                                   "group": group}
            if kind in missing:
                row["error"] = missing[kind]
                w.writerow(row)
                continue
            try:
                fn = (int8_mm(torch, m, n, k, dev) if kind == "int8"
                      else weight_only(torch, kind, m, n, k, group, dev))
                r = time_calls(torch, fn)
                row |= {"time_ms": f"{r['best_s'] * 1e3:.6g}",
                        "median_ms": f"{r['median_s'] * 1e3:.6g}",
                        "spread": f"{r['spread']:.3g}"}
            except Exception as exc:  # noqa: BLE001 - recorded per row
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                if isinstance(exc, (AttributeError, NotImplementedError)) or "not implemented" \
                        in str(exc).lower():
                    missing[kind] = row["error"]
                log(f"quant {kind} {m}x{n}x{k}: {row['error']}")
            w.writerow(row)
            if i % 40 == 0:
                f.flush()
                log(f"quant: {i + 1}/{len(rows)}")
            if dev == "cuda":
                torch.cuda.empty_cache()
