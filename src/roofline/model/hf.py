"""Hugging Face ``config.json`` files as models: one small adapter per ``model_type``.

Each adapter maps the config's names (``hidden_size``, ``num_key_value_heads``, ``n_embd``...)
onto model.yaml's layers: an embedding, the transformer blocks (``repeat``), the final norm and
the output layer (tied to the embedding or not). The result is a model.yaml mapping, validated
like any other; ``batch`` and ``seq`` are never in a config (give ``--batch`` and ``--seq``),
``dtype`` comes from ``torch_dtype`` (or ``dtype``) when the config has it, ``context`` (the
longest sequence the model takes) from ``max_position_embeddings`` (gpt2: ``n_positions``).

- llama, mistral, qwen2, mixtral, qwen3, qwen3_moe: rmsnorm, gated (SwiGLU) FFN, causal, rotary
  position embeddings (RoPE), no biases (qwen2: a
  bias on the fused QKV projection), untied output unless ``tie_word_embeddings``; mixtral:
  ``num_local_experts`` experts, ``num_experts_per_tok`` per token; mistral, mixtral: a
  ``sliding_window`` (Mistral 7B v0.1's 4096) as the block's ``window``.
- qwen3, qwen3_moe (transformers' ``Qwen3ForCausalLM``, ``Qwen3MoeForCausalLM``): as llama with
  an explicit ``head_dim`` (Qwen3-32B: 64 heads x 128 = 8192 wide attention on a 5120 hidden) and
  the per-head RMSNorm on queries and keys before the rotary embedding (``q_norm``, ``k_norm``:
  the block's ``qk_norm``; qwen3 without ``head_dim``: 128, ``Qwen3Config``'s default); no QKV
  bias (``attention_bias``, false in every published config, is Llama's key and warned of as
  Llama's is). qwen3_moe: every block a mixture of ``num_experts``
  experts of ``moe_intermediate_size``, ``num_experts_per_tok`` a token, where every layer is
  sparse (``decoder_sparse_step`` 1, ``mlp_only_layers`` empty, as every published Qwen3-MoE;
  the dense ``intermediate_size`` then unused); none sparse, dense blocks of
  ``intermediate_size`` (so with ``num_experts`` 0); dense layers among sparse ones are refused
  in one line (``_qwen3_moe``). Its router takes a weight format (the block's
  ``quantized_router``), as vLLM's ``Qwen3MoeSparseMoeBlock`` hands its gate the quantization
  config (``model.quantized``); mixtral's and deepseek_v3's stay at the model's dtype.
  ``norm_topk_prob`` (the top-k weights renormalized: k values a token), ``router_aux_loss_coef``
  and ``output_router_logits`` (the load-balancing loss, a training objective over the router's
  logits the step computes anyway) change no GEMM, op or memory roofline counts: read by none.
- deepseek_v3 (transformers' ``DeepseekV3ForCausalLM``; DeepSeek-V3 and R1): as llama, with
  multi-head latent attention (the block's ``q_lora_rank``, ``kv_lora_rank``,
  ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``: ``layers.mla``) and two runs of
  blocks, as ``DeepseekV3DecoderLayer`` builds them: the first ``first_k_dense_replace`` dense,
  a gated FFN of ``intermediate_size`` (``blk``), the rest (``moe_blk``) a mixture of
  ``n_routed_experts`` experts of ``moe_intermediate_size``, ``num_experts_per_tok`` a token,
  beside ``n_shared_experts`` shared experts every token runs (``DeepseekV3MoE``'s
  ``shared_experts``: one gated FFN of moe_intermediate_size x n_shared_experts, the block's
  ``shared_ffn``). The router is one hidden x n_routed_experts GEMM and its top-k (an op):
  transformers' ``DeepseekV3TopkRouter``, whose sigmoid scores, grouped top-k (``n_group``,
  ``topk_group``, ``topk_method``), ``e_score_correction_bias`` (a buffer, not a parameter),
  ``norm_topk_prob`` and ``routed_scaling_factor`` change no GEMM and no memory a roofline
  counts: read by none. ``moe_layer_freq`` other than 1 (every layer past the dense ones
  sparse, which transformers' model assumes) is refused in one line. The multi-token-prediction
  module (``num_nextn_predict_layers``: layer 61 of the checkpoint, which transformers does not
  load and plain inference does not run) is left out, said as a warning (``UNMODELLED``). A
  key left out takes transformers' ``DeepseekV3Config`` default (``DEEPSEEK_DEFAULTS``:
  ``q_lora_rank`` 1536, ``first_k_dense_replace`` 3, ``n_shared_experts`` 1); ``q_lora_rank:
  null`` is one full query projection, ``n_shared_experts: null`` none (vLLM's), a null
  ``first_k_dense_replace`` refused.
- gpt2: learned positions, layernorm, GELU FFN of ``n_inner`` (4 x n_embd), biases, causal,
  output tied to the token embedding.
- bert: as BertForMaskedLM: word, position and token-type embeddings and their layernorm,
  bidirectional blocks with biases, and the masked-LM head (dense + GELU + layernorm, then the
  vocabulary projection tied to the word embedding, with its bias).

A key that changes what the model computes or keeps and that no adapter models
(``UNMODELLED``: Qwen2's and Qwen3's sliding window, which covers only some layers, Llama's
optional biases) is kept as ``ConfigModel.unmodelled`` and becomes a warning in every command's
output, never dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import InputError
from ..files.fields import Fields
from ..files.numbers import quoted
from .dtypes import TORCH_DTYPES

#: model types whose ``sliding_window`` (every layer's) is the block's ``window``
WINDOWED = ("mistral", "mixtral")
#: Config keys that change what a model computes or keeps and that no adapter models, with what
#: the model counts instead (``ConfigModel.unmodelled``; ``Report.warnings`` says so): never
#: dropped silently. ``sliding_window`` where ``use_sliding_window`` turns it on (Qwen2: a window
#: on the layers from ``max_window_layers`` on, which one block repeated cannot say; Qwen3's and
#: Qwen3-MoE's read as Qwen2's, off in every published config; Mistral's
#: and Mixtral's cover every layer and are the block's ``window``); ``attention_bias`` /
#: ``mlp_bias``: Llama-family biases on the attention projections / the FFN (the adapters build
#: them without); ``quantization_config``: weights stored quantized (GPTQ, AWQ, bitsandbytes,
#: fp8), which a config's dtype does not say (``--weights`` does). The keys of the mixtures of
#: experts and attention that no adapter builds (DeepSeek's, Qwen2-MoE's), where a config of a
#: supported ``model_type`` carries them (a DeepSeek-like model written as ``mixtral``): shared
#: experts, the experts' own width, the first dense blocks, low-rank (MLA) query and KV
#: projections, each a positive integer.
UNMODELLED = {
    "sliding_window": "attention and the KV cache are counted over every earlier token, not "
                      "the last {value} only (more than the model does beyond {value} tokens)",
    "attention_bias": "the attention projections are taken without their biases",
    "mlp_bias": "the FFN is taken without its biases",
    "quantization_config": "the weights are counted unquantized, in the model's dtype (in "
                           "inference, --weights int4 with --group-size, int8 or fp8 counts "
                           "them as stored)",
    "n_shared_experts": "the shared experts ({value}) every token also runs are left out",
    "shared_expert_intermediate_size": "the shared expert every token also runs is left out",
    "moe_intermediate_size": "each expert is taken at intermediate_size, not {value} wide "
                             "(the dense blocks' width)",
    "first_k_dense_replace": "every block is taken as a mixture of experts, the first {value} "
                             "too, which are dense",
    "q_lora_rank": "queries are taken as one full projection, not through a rank-{value} one",
    "kv_lora_rank": "keys and values are taken as plain grouped-query projections and cache, "
                    "not compressed through a rank-{value} latent",
    "num_nextn_predict_layers": "the {value} multi-token-prediction module(s) (a block, its "
                                "projection and norms, which speculative decoding runs; not "
                                "loaded by transformers) are left out: plain inference does not "
                                "run them, training with their objective would, and the "
                                "parameters do not count them",
}
#: The keys of ``UNMODELLED`` that count when set to a positive integer.
_POSITIVE_KEYS = ("n_shared_experts", "shared_expert_intermediate_size", "moe_intermediate_size",
                  "first_k_dense_replace", "q_lora_rank", "kv_lora_rank",
                  "num_nextn_predict_layers")
#: The keys of ``UNMODELLED`` a model type's adapter models (none said of it): qwen3_moe's
#: experts' width, deepseek_v3's latent attention, shared experts and first dense blocks.
MODELLED = {"qwen3_moe": frozenset({"moe_intermediate_size"}),
            "deepseek_v3": frozenset({"n_shared_experts", "moe_intermediate_size",
                                      "first_k_dense_replace", "q_lora_rank", "kv_lora_rank"})}

#: In a layer an adapter builds: which config key gave each model.yaml field. model_from_config
#: takes it out of the layer (model.yaml has no such field) into ``ConfigModel.names``.
_FROM = "_from"


class ConfigModel(dict):
    """The model.yaml mapping a config describes; ``names`` maps each model.yaml field path it
    filled (``layers[1].kv_heads``) to the config key that gave it (``num_key_value_heads``),
    so that an error names the key the user wrote (``renamed``)."""

    names: dict[str, str]
    unmodelled: list[tuple[str, str]]  # (key, value) of the config's keys in UNMODELLED it sets
    #: (key, value as a message writes it) of a torch_dtype / dtype that names no dtype in
    #: TORCH_DTYPES (``int8``, ``auto``), where none of the two does; else None
    unread_dtype: tuple[str, str] | None


def model_from_config(config: Any, source: str) -> ConfigModel:
    """The model.yaml mapping a Hugging Face config describes (see the module docstring)."""
    fields = Fields(config, source)
    kind = fields.string("model_type")
    if kind not in ADAPTERS:
        raise fields.fail("model_type", f"unsupported model_type {kind!r} (supported: "
                                        f"{', '.join(ADAPTERS)})")
    model = ConfigModel()
    model.names = {}
    model.unmodelled = _unmodelled(config)
    model["layers"] = ADAPTERS[kind](fields)
    for index, layer in enumerate(model["layers"]):
        for field, key in layer.pop(_FROM, {}).items():
            model.names[f"layers[{index}].{field}"] = key
    for key in ("max_position_embeddings", "n_positions"):  # the context the model takes
        if fields.get(key, None) is not None:
            model["context"] = fields.positive_int(key)
            model.names["context"] = key
            break
    model.unread_dtype = None
    for key in ("torch_dtype", "dtype"):
        value = config.get(key)
        if isinstance(value, str) and value in TORCH_DTYPES:
            model["dtype"] = TORCH_DTYPES[value]
            model.names["dtype"] = key
            model.unread_dtype = None
            break
        if value is not None and model.unread_dtype is None:  # said if no dtype is given
            model.unread_dtype = (key, quoted(value) if isinstance(value, str)
                                  else f"{value!r:.40}")
    name = config.get("_name_or_path")
    if isinstance(name, str) and name.strip():
        model["name"] = name
        model.names["name"] = "_name_or_path"
    return model


def _unmodelled(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The keys of ``UNMODELLED`` the config sets to have an effect, as (key, value): a
    positive ``sliding_window`` not turned off by ``use_sliding_window: false`` (Qwen2's), a
    true ``attention_bias`` or ``mlp_bias``, a quantization, a positive ``_POSITIVE_KEYS``."""
    out = []
    window = config.get("sliding_window")
    if (config.get("model_type") not in WINDOWED and isinstance(window, int)
            and not isinstance(window, bool) and window > 0
            and config.get("use_sliding_window", True) is not False):
        out.append(("sliding_window", str(window)))
    out += [(key, "true") for key in ("attention_bias", "mlp_bias") if config.get(key) is True]
    quantized = config.get("quantization_config")
    if isinstance(quantized, dict) and quantized:
        out.append(("quantization_config", _quantization_text(quantized)))
    modelled = MODELLED.get(str(config.get("model_type")), frozenset())
    out += [(key, str(config[key])) for key in _POSITIVE_KEYS
            if isinstance(config.get(key), int) and not isinstance(config.get(key), bool)
            and config[key] > 0 and key not in modelled and not (
                key == "moe_intermediate_size" and config[key] == config.get("intermediate_size"))]
    return out


def _quantization_text(config: dict[str, Any]) -> str:
    """A config's ``quantization_config`` in a few words: its method, bits and group size where
    it gives them (GPTQ and AWQ: ``bits``, ``group_size``; bitsandbytes: ``load_in_4bit`` /
    ``load_in_8bit``)."""
    parts = [str(config.get("quant_method", "a quantization"))]
    bits = config.get("bits") or config.get("w_bit")
    if bits is None:
        bits = 4 if config.get("load_in_4bit") is True else 8 if config.get(
            "load_in_8bit") is True else None
    if bits is not None:
        parts.append(f"{bits}-bit weights")
    group = config.get("group_size", config.get("q_group_size"))
    if isinstance(group, int) and not isinstance(group, bool) and group > 0:
        parts.append(f"groups of {group}")
    return ", ".join(parts)


def renamed(error: InputError, model: ConfigModel) -> InputError:
    """``error`` (raised on ``model``, named by model.yaml's field paths) named by the config's
    own keys: ``layers[1].kv_heads: expected a divisor of heads (32)`` becomes
    ``num_key_value_heads: expected a divisor of num_attention_heads (32)``. A path no config
    key gave (a layer as a whole) is kept, said to be of the model built from the config."""
    path = error.path
    if path not in model.names:
        if not path:
            return error
        return InputError(error.source, "", f"{error.problem} (at {path} of the model built "
                                            f"from the config)")
    layer = path.rpartition(".")[0] + "." if "." in path else ""
    fields = {p[len(layer):]: key for p, key in model.names.items()
              if p.startswith(layer) and "." not in p[len(layer):]}
    problem = re.sub(r"\b(\w+)(?= \()", lambda m: fields.get(m.group(1), m.group(1)),
                     error.problem)  # "heads (32)": another field named with its value
    return InputError(error.source, model.names[path], problem)


def _llama(f: Fields) -> list[dict[str, Any]]:
    hidden, vocab = f.positive_int("hidden_size"), f.positive_int("vocab_size")
    heads, kind = f.positive_int("num_attention_heads"), f.get("model_type")
    layers = f.positive_int("num_hidden_layers")
    sparse = kind == "qwen3_moe" and _qwen3_moe(f, layers)
    ffn = "moe_intermediate_size" if sparse else "intermediate_size"
    block: dict[str, Any] = {
        "type": "transformer", "name": "blk", "hidden": hidden, "heads": heads,
        "kv_heads": f.positive_int("num_key_value_heads", heads),
        "ffn": f.positive_int(ffn), "gated": True, "causal": True,
        "norm": "rmsnorm", "rotary": True, "repeat": layers,
        _FROM: {"hidden": "hidden_size", "heads": "num_attention_heads",
                "kv_heads": "num_key_value_heads" if f.has("num_key_value_heads")
                else "num_attention_heads", "ffn": ffn,
                "repeat": "num_hidden_layers", "head_dim": "head_dim",
                "experts": "num_experts" if sparse else "num_local_experts",
                "top_k": "num_experts_per_tok"}}
    if f.get("head_dim", None) is not None:
        block["head_dim"] = f.positive_int("head_dim")
    elif kind == "qwen3" and not f.has("head_dim"):  # Qwen3Config's default, not hidden / heads
        block["head_dim"] = QWEN3_HEAD_DIM
    if kind == "qwen2":
        block["bias"] = "qkv"
    if kind in ("qwen3", "qwen3_moe"):  # q_norm, k_norm: RMSNorm over each head's head_dim
        block["qk_norm"] = True
    if kind in WINDOWED and f.get("sliding_window", None) is not None:
        block["window"] = f.positive_int("sliding_window")
        block[_FROM]["window"] = "sliding_window"
    if kind == "mixtral":
        block["experts"] = f.positive_int("num_local_experts")
        block["top_k"] = f.positive_int("num_experts_per_tok")
    if sparse:
        block["experts"] = f.positive_int("num_experts")
        block["top_k"] = f.positive_int("num_experts_per_tok")
        block["quantized_router"] = True  # vLLM's Qwen3-MoE gate takes the format
    return [{"type": "embedding", "name": "embed_tokens", "vocab": vocab, "dim": hidden,
             _FROM: {"vocab": "vocab_size", "dim": "hidden_size"}},
            block,
            {"type": "norm", "name": "norm", "dim": hidden, "norm": "rmsnorm",
             _FROM: {"dim": "hidden_size"}},
            {"type": "linear", "name": "lm_head", "in": hidden, "out": vocab,
             "tied": _tied(f, False), _FROM: _HEAD}]


def _qwen3_moe(f: Fields, layers: int) -> bool:
    """Whether every one of a qwen3_moe config's ``layers`` is sparse (a mixture of experts):
    transformers' ``Qwen3MoeDecoderLayer`` makes layer i (from 0) sparse when i is not in
    ``mlp_only_layers`` and (i + 1) is a multiple of ``decoder_sparse_step``, else a dense MLP of
    ``intermediate_size``. True where every layer is sparse, False where none is; dense layers
    among sparse ones are refused in one line, naming the key that makes them: one block
    repeated cannot be both, and taking them all as either would be silently wrong. A
    ``num_experts`` of 0 makes none sparse (transformers' and vLLM's rule asks ``num_experts >
    0`` too)."""
    if f.get("num_experts", None) == 0 and not isinstance(f.get("num_experts"), bool):
        return False
    step = f.positive_int("decoder_sparse_step", 1)
    only = f.get("mlp_only_layers", None)
    only = [] if only is None else f.items("mlp_only_layers")  # None: transformers' []
    for i, value in enumerate(only):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f.source, f"mlp_only_layers[{i}]",
                             f"expected a layer index (an integer), got {value!r:.40}")
    dense = sorted({i for i in only if 0 <= i < layers and (i + 1) % step == 0})
    sparse = layers // step - len(dense)
    if sparse in (0, layers):
        return sparse == layers
    key, why = (("decoder_sparse_step", f"every layer but each {_ordinal(step)} is dense")
                if step > 1 else ("mlp_only_layers", f"layers {_listed(dense)} are dense"))
    raise f.fail(key, f"{why}: {layers - sparse} dense layers (intermediate_size) among {sparse} "
                      f"sparse ones (num_experts), which one repeated block cannot say; read are "
                      f"configs whose layers are all sparse (decoder_sparse_step 1, "
                      f"mlp_only_layers []) or all dense")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _listed(indices: list[int]) -> str:
    """Layer indices as a message writes them: the first 5, then how many more."""
    shown = ", ".join(map(str, indices[:5]))
    return shown + (f" and {len(indices) - 5} more" if len(indices) > 5 else "")


def _deepseek(f: Fields) -> list[dict[str, Any]]:
    """DeepSeek-V3's layers (the module docstring): embedding, ``first_k_dense_replace`` dense
    blocks (``blk``), the sparse ones (``moe_blk``), final norm, untied output layer. A run of
    no blocks (none dense, or none sparse) is left out."""
    hidden, vocab = f.positive_int("hidden_size"), f.positive_int("vocab_size")
    heads, layers = f.positive_int("num_attention_heads"), f.positive_int("num_hidden_layers")
    dense = min(layers, _count(f, "first_k_dense_replace"))
    if f.get("moe_layer_freq", None) not in (None, 1):
        raise f.fail("moe_layer_freq", f"expected 1 (every layer past first_k_dense_replace a "
                                       f"mixture of experts, as transformers builds "
                                       f"DeepseekV3), got {f.get('moe_layer_freq')!r:.40}: "
                                       f"dense layers among sparse ones are not read")
    q_rank = f.get("q_lora_rank", DEEPSEEK_DEFAULTS["q_lora_rank"])
    attention: dict[str, Any] = {
        "type": "transformer", "hidden": hidden, "heads": heads, "gated": True,
        "causal": True, "norm": "rmsnorm", "rotary": True,
        "kv_lora_rank": f.positive_int("kv_lora_rank"),
        "qk_nope_head_dim": f.positive_int("qk_nope_head_dim"),
        "qk_rope_head_dim": f.positive_int("qk_rope_head_dim"),
        "v_head_dim": f.positive_int("v_head_dim")}
    if q_rank is not None:  # null: one full query projection (DeepSeek-V2-Lite)
        attention["q_lora_rank"] = f.positive_int("q_lora_rank", q_rank)
    names = {"hidden": "hidden_size", "heads": "num_attention_heads",
             **{key: key for key in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                     "qk_rope_head_dim", "v_head_dim")}}
    blocks = []
    if dense:
        blocks.append({**attention, "name": "blk", "ffn": f.positive_int("intermediate_size"),
                       "repeat": dense, _FROM: {**names, "ffn": "intermediate_size",
                                                "repeat": "first_k_dense_replace"}})
    if layers > dense:
        shared = f.get("n_shared_experts", DEEPSEEK_DEFAULTS["n_shared_experts"])
        sparse = {**attention, "name": "moe_blk", "ffn": f.positive_int("moe_intermediate_size"),
                  "experts": f.positive_int("n_routed_experts"),
                  "top_k": f.positive_int("num_experts_per_tok"), "repeat": layers - dense,
                  _FROM: {**names, "ffn": "moe_intermediate_size", "experts": "n_routed_experts",
                          "top_k": "num_experts_per_tok", "shared_ffn": "n_shared_experts",
                          "repeat": "num_hidden_layers"}}
        if shared is not None and _count(f, "n_shared_experts"):  # null: none (vLLM's)
            sparse["shared_ffn"] = sparse["ffn"] * _count(f, "n_shared_experts")
        blocks.append(sparse)
    return [{"type": "embedding", "name": "embed_tokens", "vocab": vocab, "dim": hidden,
             _FROM: {"vocab": "vocab_size", "dim": "hidden_size"}},
            *blocks,
            {"type": "norm", "name": "norm", "dim": hidden, "norm": "rmsnorm",
             _FROM: {"dim": "hidden_size"}},
            {"type": "linear", "name": "lm_head", "in": hidden, "out": vocab,
             "tied": _tied(f, False), _FROM: _HEAD}]


#: The head_dim transformers' ``Qwen3Config`` takes when a qwen3 config leaves it out (its
#: ``head_dim: int = 128``; vLLM reads the config through that class): Qwen3-32B's 64 heads of
#: 128 on a 5120 hidden, not 5120 / 64 = 80. (``Qwen3MoeConfig`` has no such default: its
#: modelling code takes hidden / heads, as every other adapter does.)
QWEN3_HEAD_DIM = 128

#: What transformers' ``DeepseekV3Config`` takes for a key a config leaves out (its
#: ``__init__`` defaults, DeepSeek-V3's own values; vLLM reads the config through the same class):
#: a config without ``q_lora_rank`` has V3's rank-1536 query latent, not the full projection of a
#: ``q_lora_rank: null`` (DeepSeek-V2-Lite's), without ``first_k_dense_replace`` 3 dense blocks,
#: without ``n_shared_experts`` one shared expert.
DEEPSEEK_DEFAULTS = {"q_lora_rank": 1536, "first_k_dense_replace": 3, "n_shared_experts": 1}


def _count(f: Fields, key: str) -> int:
    """A non-negative integer key (``first_k_dense_replace``, ``n_shared_experts``: 0 allowed),
    ``DEEPSEEK_DEFAULTS``' value when the config leaves it out; null refused (transformers and
    vLLM compare ``first_k_dense_replace`` with each layer's index)."""
    value = f.get(key, DEEPSEEK_DEFAULTS[key])
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise f.fail(key, f"expected a non-negative integer, got {value!r:.40}")
    return value


def _gpt2(f: Fields) -> list[dict[str, Any]]:
    hidden, vocab = f.positive_int("n_embd"), f.positive_int("vocab_size")
    inner = f.get("n_inner", None)
    return [{"type": "embedding", "name": "wte", "vocab": vocab, "dim": hidden,
             "positions": f.positive_int("n_positions"),
             _FROM: {"vocab": "vocab_size", "dim": "n_embd", "positions": "n_positions"}},
            {"type": "transformer", "name": "blk", "hidden": hidden,
             "heads": f.positive_int("n_head"),
             "ffn": f.positive_int("n_inner") if inner is not None else 4 * hidden,
             "causal": True, "bias": "all", "repeat": f.positive_int("n_layer"),
             _FROM: {"hidden": "n_embd", "heads": "n_head", "kv_heads": "n_head",
                     "ffn": "n_inner" if inner is not None else "n_embd",
                     "repeat": "n_layer"}},
            {"type": "norm", "name": "ln_f", "dim": hidden, _FROM: {"dim": "n_embd"}},
            {"type": "linear", "name": "lm_head", "in": hidden, "out": vocab,
             "tied": _tied(f, True), _FROM: {"in": "n_embd", "out": "vocab_size",
                                             "tied": "tie_word_embeddings"}}]


def _bert(f: Fields) -> list[dict[str, Any]]:
    hidden, vocab = f.positive_int("hidden_size"), f.positive_int("vocab_size")
    dim = {"dim": "hidden_size"}
    return [{"type": "embedding", "name": "embeddings", "vocab": vocab, "dim": hidden,
             "positions": f.positive_int("max_position_embeddings"),
             "types": f.positive_int("type_vocab_size"),
             _FROM: {"vocab": "vocab_size", "dim": "hidden_size",
                     "positions": "max_position_embeddings", "types": "type_vocab_size"}},
            {"type": "norm", "name": "embeddings.norm", "dim": hidden, _FROM: dim},
            {"type": "transformer", "name": "blk", "hidden": hidden,
             "heads": f.positive_int("num_attention_heads"),
             "ffn": f.positive_int("intermediate_size"), "bias": "all",
             "repeat": f.positive_int("num_hidden_layers"),
             _FROM: {"hidden": "hidden_size", "heads": "num_attention_heads",
                     "kv_heads": "num_attention_heads", "ffn": "intermediate_size",
                     "repeat": "num_hidden_layers"}},
            {"type": "linear", "name": "mlm.transform", "in": hidden, "out": hidden,
             "bias": True, "activation": "gelu", _FROM: {"in": "hidden_size",
                                                         "out": "hidden_size"}},
            {"type": "norm", "name": "mlm.norm", "dim": hidden, _FROM: dim},
            {"type": "linear", "name": "mlm.decoder", "in": hidden, "out": vocab, "bias": True,
             "tied": _tied(f, True), _FROM: _HEAD}]


_HEAD = {"in": "hidden_size", "out": "vocab_size", "tied": "tie_word_embeddings"}


def _tied(f: Fields, default: bool) -> bool:
    return f.boolean("tie_word_embeddings", default)


ADAPTERS: dict[str, Callable[[Fields], list[dict[str, Any]]]] = {
    "llama": _llama, "mistral": _llama, "qwen2": _llama, "mixtral": _llama, "qwen3": _llama,
    "qwen3_moe": _llama, "deepseek_v3": _deepseek, "gpt2": _gpt2, "bert": _bert}
