"""Do quantized GEMMs, as torch runs them on an H100, take the time roofline predicts? On demand
(no test; no GPU: it reads what benchmarks/gpu_measure.py --parts quant timed on a lent H100 SXM5,
benchmarks/data/h100_live_quant.csv, and predicts each row on the datasheet entry):

    .venv/bin/python benchmarks/bench_gpu_quant.py [--markdown]

Per kind and range of tokens (M): the rows, measured / predicted median (range), the share
within 1.25x, and the best rate measured. The kinds (benchmarks/_quant_gemms.py): bf16
(``F.linear``, the dense baseline), w4a16 (``_weight_int4pack_mm``, int4 weights in groups of
128 and bf16 activations), w8a16 (``_weight_int8pack_mm``), int8 (``torch._int_mm``, int8 x
int8 -> int32). roofline predicts a weight-only GEMM as one fused kernel that dequantizes B
as it loads it (TensorRT-LLM's fpA_intB; ``gpu_gemm.WEIGHT_ONLY_TILES``) and an int8 GEMM at
the int8 Tensor-Core peak's sustained share: what the two torch kernels fall short of is
torch's, and the README says so.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

from _tables import table_lines

DATA = Path(__file__).resolve().parent / "data" / "h100_live_quant.csv"
#: the kinds as roofline's GEMMs: (math dtype, B as stored)
KINDS = {"bf16": ("bf16", ""), "w4a16": ("bf16", "int4"), "w8a16": ("bf16", "int8"),
         "int8": ("int8", "")}
RANGES = ((1, 2), (4, 8), (16, 64), (128, 256), (1024, 4096), (4097, 10**9))


def ratios(path: Path = DATA) -> list[dict]:
    """Each timed row with its prediction on ``h100-sxm5-80gb`` (group 128 for int4)."""
    from roofline.analysis.report import analyze_gemm
    from roofline.hardware.catalog import load_hardware
    from roofline.model.gemm import Gemm

    hw = load_hardware("h100-sxm5-80gb")
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if not row["time_ms"] or (row["kind"] == "w4a16" and row["group"] != "128"):
                continue
            dtype, stored = KINDS[row["kind"]]
            m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
            gemm = Gemm("MM1", "x", "forward", m, n, k, dtype, b_dtype=stored,
                        group_size=128 if stored == "int4" else 0)
            measured = float(row["time_ms"]) * 1e-3
            out.append({"kind": row["kind"], "m": m, "n": n, "k": k, "measured_s": measured,
                        "ratio": measured / analyze_gemm(gemm, hw).predicted_time_s,
                        "tflops": 2 * m * n * k / measured / 1e12})
    return out


def summary(rows: list[dict], markdown: bool = False) -> list[str]:
    body = []
    for kind in KINDS:
        for lo, hi in RANGES:
            got = [r for r in rows if r["kind"] == kind and lo <= r["m"] <= hi]
            if not got:
                continue
            values = [r["ratio"] for r in got]
            near = sum(max(v, 1 / v) <= 1.25 for v in values) / len(values)
            tokens = f"{lo}-{hi}" if hi < 10**9 else f"{lo}+"
            body.append([kind, tokens, str(len(got)),
                         f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})",
                         f"{near:.0%}", f"{max(r['tflops'] for r in got):,.0f}"])
    header = ["kind", "tokens (M)", "GEMMs", "measured / predicted: median (range)",
              "within 1.25x", "best TFLOP/s (TOPS)"]
    return table_lines(header, body, markdown)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"error: {DATA} is missing", file=sys.stderr)
        return 2
    print("quantized GEMMs through torch 2.11.0+cu130 on a lent H100 SXM5 (data/"
          "h100_live_quant.csv; CUDA-graph replays), against the h100-sxm5-80gb datasheet entry")
    print("\n".join(summary(ratios(), args.markdown)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
