"""Do roofline's LLM serving predictions hold on GPUs? Run on demand (not a test):

    .venv/bin/python benchmarks/bench_serving.py [--markdown]

Reads benchmarks/data/trtllm_perf.csv: the Llama-2-7B rows of TensorRT-LLM's published
performance tables (A100 in fp16, H100 and L40S with fp8 GEMMs and an fp8 KV cache, one GPU; see
benchmarks/data/README.md): output tokens per second of a static batch (B sequences of an
input of I tokens each generating O, every sequence's tokens over the whole run, prefill
included) and the first-token latency of one sequence. Each row is predicted as ``analyze
--prompt I --generate O`` predicts it (``roofline.api.analyze_model``: the prefill and every
decode step, GEMMs and ops at ``predicted_time_s``, flash attention), on the hwdb entry, at
the row's precision (the engine's fp16 with its GEMMs in fp8: ``--weights fp8 --activations
fp8 --kv-cache fp8``), and at the roofline for comparison. Prints each row's published figure,
both predictions and measured / predicted as a ratio of times (published time over predicted
time: above 1, the GPU was slower than predicted), then per metric the share within 1.25x and
2x and the median. Nothing here is fitted: every constant the prediction uses was fixed before
these figures were read.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from _tables import table_lines

DATA = Path(__file__).parent / "data" / "trtllm_perf.csv"
MODELS = Path(__file__).parents[1] / "examples" / "hf"
THROUGHPUT, FIRST_TOKEN = "output_tokens_per_s", "first_token_latency_ms"


@dataclass(frozen=True)
class Row:
    version: str
    device: str
    model: str
    precision: dict[str, str]  # analyze_model's dtype, weights, activations, kv_cache
    batch: int
    input_len: int
    output_len: int
    metric: str
    value: float

    @property
    def label(self) -> str:
        fp8 = " (fp8 GEMMs, KV)" if self.precision.get("weights") == "fp8" else ""
        return f"{self.device} {self.precision['dtype']}{fp8}"


def load_rows(path: Path = DATA) -> list[Row]:
    """The published rows (one GPU: ``tp`` 1)."""
    with open(path, newline="") as f:
        out = []
        for r in csv.DictReader(f):
            if r["tp"] != "1":
                continue
            precision = {k: r[k] for k in ("dtype", "weights", "activations", "kv_cache")
                         if r[k]}
            out.append(Row(r["version"], r["device"], r["model"], precision, int(r["batch"]),
                           int(r["input_len"]), int(r["output_len"]), r["metric"],
                           float(r["value"])))
    return out


def predicted(row: Row) -> tuple[float, float]:
    """(predicted, roofline) seconds of the row's measured quantity: the whole run for a
    throughput row (B x O tokens), the first token's time for a latency row."""
    from roofline.api import analyze_model

    report = analyze_model(MODELS / f"{row.model}.json", row.device, batch=row.batch,
                           mode="inference", prompt=row.input_len, generate=row.output_len,
                           **row.precision)
    g = report.generation
    assert g is not None  # analyze_model with a prompt and an output length
    if row.metric == THROUGHPUT:
        return g.predicted_latency_s, g.latency_s
    return g.predicted_ttft_s, g.ttft_s


def measured_s(row: Row) -> float:
    """The row's published figure as seconds of the same quantity as ``predicted``."""
    if row.metric == THROUGHPUT:
        return row.batch * row.output_len / row.value
    return row.value / 1e3


def within(ratios: list[float], band: float) -> float:
    return sum(max(r, 1 / r) <= band for r in ratios) / len(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="tables in Markdown")
    args = parser.parse_args(argv)
    from roofline.units import seconds

    rows = load_rows()
    header = ["TensorRT-LLM", "device, precision", "batch", "in / out", "published",
              "predicted", "roofline", "measured / predicted", "measured / roofline"]
    body = []
    ratios: dict[str, tuple[list[float], list[float]]] = {THROUGHPUT: ([], []),
                                                           FIRST_TOKEN: ([], [])}
    for row in rows:
        pred, roof = predicted(row)
        meas = measured_s(row)
        ratios[row.metric][0].append(meas / pred)
        ratios[row.metric][1].append(meas / roof)
        if row.metric == THROUGHPUT:
            shown = [f"{row.value:,.0f} tok/s", f"{row.batch * row.output_len / pred:,.0f}",
                     f"{row.batch * row.output_len / roof:,.0f}"]
        else:
            shown = [f"TTFT {seconds(meas)}", seconds(pred), seconds(roof)]
        body.append([f"v{row.version}", row.label, str(row.batch),
                     f"{row.input_len} / {row.output_len}", *shown, f"{meas / pred:.2f}",
                     f"{meas / roof:.2f}"])
    print("Llama-2-7B on one GPU: TensorRT-LLM's published figures (benchmarks/data/"
          "trtllm_perf.csv) against roofline's prediction; ratios of times")
    print("\n".join(table_lines(header, body, markdown=args.markdown)))
    names = {THROUGHPUT: "output tokens/s (static batch)", FIRST_TOKEN: "first-token latency"}
    for metric, (pred_r, roof_r) in ratios.items():
        if pred_r:
            print(f"\n{names[metric]}, {len(pred_r)} rows: predicted within 1.25x "
                  f"{within(pred_r, 1.25):.0%}, 2x {within(pred_r, 2):.0%}, median "
                  f"{statistics.median(pred_r):.2f}; roofline within 1.25x "
                  f"{within(roof_r, 1.25):.0%}, 2x {within(roof_r, 2):.0%}, median "
                  f"{statistics.median(roof_r):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
