"""The options that override a model's own settings (``--batch``, ``--dtype``, ``--mode``,
``--seq``, ...), the generation's ``--prompt`` / ``--generate`` and serving over several GPUs'
``--tp`` / ``--gpus-per-node`` / ``--intra`` (and analyze's ``--pp`` / ``--inter``), as
decorators."""

from __future__ import annotations

import click

from ..errors import InputError
from ..model.dtypes import ACCUMULATION_DTYPES, DTYPES, KV_DTYPES, OUTPUT_DTYPES, WEIGHT_DTYPES
from .options import COUNT, Count, Stages, _given

#: The options only an inference step reads: plan, which lays out training steps, parses them
#: unlisted in its --help and refuses each, and --mode inference, in one line
#: (``plan_command._refuse_inference``).
INFERENCE_ONLY = ("phase", "weights", "group_size", "kv_cache", "logits")


def _model_option_list(batch: bool = True, seq: bool = True, training: bool = False) -> list:
    """The options that override a model's own settings (every command that reads a model);
    sweep gives its batches and sequence lengths its own way; ``training`` (plan) hides the
    inference-only ones from --help."""
    hide = INFERENCE_ONLY if training else ()
    options = [
        click.option("--batch", type=COUNT,
                     help="Override the model's batch (required when the file has none)."),
        click.option("--dtype", type=click.Choice(DTYPES),
                     help="Override the model's dtype (of A and B, the operands)."),
        click.option("--output-dtype", type=click.Choice(OUTPUT_DTYPES),
                     help="dtype of C, the output [default: the operands'; int8 -> int32, "
                          "fp8 -> bf16]."),
        click.option("--grad-accumulation", type=click.Choice(ACCUMULATION_DTYPES + ("none",)),
                     help="Weight gradients accumulate into a buffer of this dtype (C read "
                          "and written, beta = 1); none: written once [default: the model's]."),
        click.option("--mode", type=click.Choice(("train", "inference")),
                     help="train: forward and backward GEMMs (3n-1 for n linear layers); "
                          "inference: forward only."),
        click.option("--seq", type=COUNT,
                     help="Override the tokens per sample (transformer models need it). Past "
                          "the model's context the step is still analyzed, with a warning: a "
                          "shape to ask about."),
        click.option("--phase", hidden="phase" in hide, type=click.Choice(("prefill", "decode")),
                     help="Inference phase: prefill (seq tokens at once) or decode (one new "
                          "token per sequence against a KV cache of seq tokens)."),
        click.option("--optimizer", type=click.Choice(("none", "sgd", "adam")),
                     help="Training: the optimizer update the step counts, on fp32 master "
                          "weights (a config.json has none) [default: the model's, else none]."),
        click.option("--weights", hidden="weights" in hide, type=click.Choice(WEIGHT_DTYPES),
                     help="Inference: how weights are stored (int4 group-quantized, int8, fp8: "
                          "weight-only when narrower than --activations, dequantized and "
                          "counted) [default: the activations' dtype]."),
        click.option("--group-size", hidden="group_size" in hide, type=COUNT,
                     help="int4 weights: values per fp16 scale (must divide every weight "
                          "GEMM's K) [default: 128]."),
        click.option("--activations", type=click.Choice(DTYPES),
                     help="The activation operand and math dtype of weight GEMMs (int8 with "
                          "int8 weights: W8A8 at the int8 peak) [default: --dtype]."),
        click.option("--kv-cache", hidden="kv_cache" in hide, type=click.Choice(KV_DTYPES),
                     help="Inference: the KV cache's dtype (fp8, int8: half the cache and its "
                          "reads) [default: --dtype]."),
        click.option("--logits", hidden="logits" in hide, type=click.Choice(("all", "last")),
                     help="Prefill: the output layer on every token (all: scoring) or on each "
                          "sequence's last token (last: generation); refused with --phase "
                          "decode, whose step makes one token a sequence [default: all; last "
                          "with --prompt/--generate]."),
        click.option("--recompute", type=click.Choice(("none", "selective", "full")),
                     help="Training: activation recomputation, fewer activations kept and "
                          "their forward work run again in the backward pass, timed in the "
                          "step: none (keep every tensor), selective (recompute naive "
                          "attention's core), full (keep each block's input, recompute the "
                          "block) [default: the model's, else none]."),
        click.option("--attention", type=click.Choice(("flash", "naive")),
                     help="Attention form of every transformer block (a config.json has "
                          "none: flash) [default: the model's]."),
    ]
    omitted = {index for index, given in ((0, batch), (5, seq)) if not given}  # --batch, --seq
    return [o for index, o in enumerate(options) if index not in omitted]


def model_options(command, batch: bool = True, seq: bool = True, training: bool = False):
    """Decorate ``command`` with the model-override options."""
    for option in reversed(_model_option_list(batch, seq, training)):
        command = option(command)
    return command


def generation_options(command):
    """Decorate ``command`` (analyze, compare, sweep) with ``--prompt`` and ``--generate``."""
    command = click.option("--generate", type=COUNT, metavar="G",
                           help="Generation: G output tokens per sequence (with --prompt).")(
        command)
    return click.option(
        "--prompt", type=COUNT, metavar="P",
        help="Generation: P prompt tokens per sequence (with --generate; sets the sequence "
             "lengths, so no --seq): time to first token, time per output token over the "
             "growing KV cache, tokens/s, latency (JSON generation), memory at the "
             "generation's peak. P + G must fit the model's context: the model writes each "
             "token at a position it has.")(command)


def serving_options(command):
    """Decorate ``command`` (analyze, compare, sweep) with ``--tp``, ``--gpus-per-node`` and
    ``--intra``: the step or the generation served over several GPUs of one node
    (``analysis.serving_tp``)."""
    command = click.option(
        "--intra", metavar="NAME|GBPS",
        help="With --tp: the link inside the node (links.yaml: nvswitch-h100, nvswitch-a100, "
             "pcie5-x16, ...; or GB/s per direction, no latency), every device's [default: "
             "each device's own, the NVSwitch of an SXM entry's NVLink, else PCIe of its host "
             "link].")(command)
    command = click.option(
        "--gpus-per-node", type=Count(high=1024), default=8, show_default=True,
        help="With --tp: GPUs that share the intra-node link (tp may not exceed it).")(command)
    return click.option(
        "--tp", type=Count(high=1024), default=1, show_default=True,
        help="Serve the step or the generation over N GPUs of one node by tensor "
             "parallelism (inference only; training splits are `roofline plan`'s): every "
             "table and figure is one GPU's shard (heads, kv_heads, FFN and vocabulary / N, "
             "which N must divide, as vLLM splits them; past the kv_heads, a multiple of "
             "them, each GPU holds one KV head, replicated), plus two all-reduces a "
             "transformer block, the embedding's, and the logits' gather each step on the "
             "intra-node link, exposed (vLLM's one-shot all-reduce for small buffers, NCCL's "
             "ring for large). Tokens/s are the N GPUs'.")(command)


def check_serving_options(tp: int, pp: int = 1, dp: int = 1) -> None:
    """--gpus-per-node and --intra describe the node a --tp group (or a --pp pipeline, or --dp
    ranks) serves on, --inter the link between a pipeline's nodes: one line without them."""
    for name in ("gpus_per_node", "intra"):
        if _given(name) and tp == 1 and pp == 1 and dp == 1:
            raise InputError(name, "", "goes with --tp N (the node a tensor-parallel group "
                                       "serves on)")
    if _given("inter") and pp == 1:
        raise InputError("inter", "", "goes with --pp N (the link between nodes a pipeline's "
                                      "stages hand off over)")


def pipeline_options(command):
    """Decorate ``command`` (analyze, compare, sweep) with ``--pp`` and ``--inter``: the step or
    the generation served over a pipeline of stages, each a --tp group
    (``analysis.serving_pp``)."""
    command = click.option(
        "--inter", metavar="NAME|GBPS",
        help="With --pp: the link between nodes, per GPU, the stages' hand-offs cross (ib-ndr, "
             "ib-hdr, 400gbe, 100gbe, ...; or GB/s per direction) [default: ib-ndr, as "
             "plan's].")(command)
    return click.option(
        "--pp", type=Stages(high=1024), default=1, show_default=True,
        help="Serve over a pipeline of N stages, each a --tp group (tp x pp GPUs; inference "
             "only), as vLLM's --pipeline-parallel-size: its transformer blocks split as vLLM "
             "splits them, or A,B,... blocks to each stage as vLLM's VLLM_PP_LAYER_PARTITION "
             "gives them (adding up to the model's blocks), each stage handing the next its "
             "hidden states (and residual) on the inter-node link where the stages sit in two "
             "nodes, else the intra-node one; every figure one GPU's, its memory the most "
             "loaded stage's with the KV cache of N batches in flight; tokens/s the tp x pp "
             "GPUs'.")(command)


def data_parallel_option(command):
    """Decorate ``command`` (analyze; compare and sweep, which refuse it,
    ``refuse_data_parallel``) with ``--dp``: the step or the generation served over
    data-parallel ranks (``analysis.serving_dp``)."""
    return click.option(
        "--dp", type=Count(high=1024), default=1, show_default=True,
        help="Serve over D data-parallel ranks of --tp GPUs each, as vLLM's "
             "--data-parallel-size D --enable-expert-parallel (inference only, one node, no "
             "--pp; not --data-parallel, which is training's gradient all-reduce): the batch "
             "spread evenly over the ranks (D must divide it), every figure one GPU's running "
             "its rank's batch / D sequences, its KV cache theirs only; a mixture of experts' "
             "experts split whole over the D x tp GPUs (--tp 1 only), each MoE layer's tokens "
             "all-gathered and its output reduce-scattered on the intra-node link (vLLM's "
             "default allgather_reducescatter backend), exposed; a dense model's ranks "
             "replicas. Tokens/s are the D ranks'.")(command)


def refuse_data_parallel(dp: int, command: str) -> None:
    """compare and sweep take no ``--dp`` (each device's or point's outputs would need the
    ranks' lines): one line naming ``analyze --dp``."""
    if dp != 1:
        raise InputError("dp", "", f"{command} does not serve over data-parallel ranks; "
                                   f"`roofline analyze --dp {dp}` does, one device at a time")
