"""A model's top-level settings: the values each takes (``MODES``, ``INFERENCE_PHASES``,
``OPTIMIZER_CHOICES``, ``RECOMPUTE``, ``LOGITS``; ``grad_accumulation`` a dtype or none,
``_accumulation``), read from model.yaml by ``network.network_from_dict``, and a call's
overrides of them (``overridden``, the body of ``Network.with_overrides``): each checked as the
file's field is, then refused where the step's mode would ignore it (``INFERENCE_SETTINGS``,
``TRAINING_SETTINGS``, ``_check_mode_settings``) or a captured module cannot take it after its
capture (``_check_captured``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import InputError, option
from ..files.fields import Fields
from .dtypes import (
    ACCUMULATION_DTYPES,
    ACTIVATION_DTYPES,
    DTYPES,
    KV_DTYPES,
    OUTPUT_DTYPES,
    WEIGHT_DTYPES,
)
from .layers import Transformer
from .layers.transformer import ATTENTION_FORMS
from .ops import OPTIMIZERS
from .repeats import Layers

if TYPE_CHECKING:
    from .network import Network

MODES = ("train", "inference")
INFERENCE_PHASES = ("prefill", "decode")
OPTIMIZER_CHOICES = ("none", *OPTIMIZERS)
RECOMPUTE = ("none", "selective", "full")
LOGITS = ("all", "last")
NO_ACCUMULATION = "none"


#: What an override's error names as its source: ``overrides: batch: expected ...``.
OVERRIDES_SOURCE = "overrides"


def int_override(key: str, value: Any) -> int:
    """The integer override ``key`` (batch, seq, group_size) checked as ``overridden`` checks
    it (numpy's integers too), for a caller that needs it before (a capture's factory is
    called with the batch)."""
    return Fields({key: value}, OVERRIDES_SOURCE).positive_int(key)


def overridden(network: Network, given: dict[str, Any], attention: str | None) -> Network:
    """``Network.with_overrides``: ``network`` with the settings ``given`` (each keyword's value,
    None where not given) checked and replaced, and ``attention`` set on every transformer
    block."""
    if attention is not None:
        form = Fields({"attention": attention}, OVERRIDES_SOURCE).choice("attention",
                                                                         ATTENTION_FORMS)
        assert isinstance(network.layers, Layers)
        network = replace(network, layers=network.layers.map(
            lambda layer: replace(layer, attention=form) if isinstance(layer, Transformer)
            else layer))
    changes: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    fields = Fields(changes, OVERRIDES_SOURCE)
    checks: dict[str, Callable[[str], object]] = {
              "batch": fields.positive_int, "seq": fields.positive_int,
              "dtype": lambda k: fields.choice(k, DTYPES),
              "mode": lambda k: fields.choice(k, MODES),
              "phase": lambda k: fields.choice(k, INFERENCE_PHASES),
              "output_dtype": lambda k: fields.choice(k, OUTPUT_DTYPES),
              "optimizer": lambda k: fields.choice(k, OPTIMIZER_CHOICES),
              "recompute": lambda k: fields.choice(k, RECOMPUTE),
              "weights": lambda k: fields.choice(k, WEIGHT_DTYPES),
              "activations": lambda k: fields.choice(k, ACTIVATION_DTYPES),
              "kv_cache": lambda k: fields.choice(k, KV_DTYPES),
              "group_size": fields.positive_int,
              "logits": lambda k: fields.choice(k, LOGITS),
              "grad_accumulation": lambda k: _accumulation(fields)}
    changes = {key: checks[key](key) for key in changes}
    if network.captured_batch is not None:
        _check_captured(network, changes, attention)
    _check_mode_settings(changes, changes.get("mode", network.mode),
                         changes.get("phase", network.phase), network.source)
    if changes.get("optimizer", network.optimizer) != network.optimizer:
        changes["update"] = ()  # another optimizer than the captured one: its own update
    return replace(network, **changes).check_tokens()


def _accumulation(fields: Fields) -> str | None:
    """``grad_accumulation``: a dtype, or none (absent, null or "none")."""
    if fields.get("grad_accumulation", None) is None:
        return None
    choice = fields.choice("grad_accumulation", (NO_ACCUMULATION,) + ACCUMULATION_DTYPES)
    return None if choice == NO_ACCUMULATION else choice


def _check_captured(network: Network, changes: dict[str, Any], attention: str | None) -> None:
    """InputError for a setting a captured module's step cannot take after its capture: its
    mode and attention form (the ops autograd and the module ran are the capture's: another
    needs a capture in it) and a seq or phase (its inputs' shapes are the step: a
    transformer layer's settings, which it has none of). The batch is refused where the
    step is built (``layers.captured``); its dtype, weight format and optimizer are overrides
    of what it ran."""
    ran = {"mode": network.mode, "attention": network.captured_attention}
    asked = {"mode": changes.get("mode"), "attention": attention}
    for key, value in asked.items():
        if value is not None and ran[key] is not None and value != ran[key]:
            raise InputError(network.source, key, f"captured in {key} {ran[key]}; {key} "
                             f"{value} needs a capture in it (roofline.torch.capture(..., "
                             f"{key}={value!r}))")
    for key in ("seq", "phase"):
        if changes.get(key) not in (None, getattr(network, key)):
            raise InputError(network.source, key, f"a captured module's step is its example "
                             f"inputs' shapes: a {key} of {changes[key]} needs a capture with "
                             f"inputs of that shape")


#: Overrides only a step of one mode reads: given for a step of the other, refused (the step
#: would run without them, unsaid). A training setting's "none" changes nothing and passes.
INFERENCE_SETTINGS = ("phase", "kv_cache", "logits")
TRAINING_SETTINGS = ("optimizer", "grad_accumulation", "recompute")


def _check_mode_settings(changes: dict[str, Any], mode: str, phase: str, source: str) -> None:
    """InputError for an override the step's ``mode`` would ignore (``INFERENCE_SETTINGS`` in a
    training step, ``TRAINING_SETTINGS`` other than none in an inference step), and for
    ``logits``, a prefill setting, in a decode step: it computes one new token's logits a
    sequence whatever ``logits`` says."""
    if mode == "train":
        given = [key for key in INFERENCE_SETTINGS if key in changes]
        kind, step, other = "an inference", "trains", "inference"
    else:
        given = [key for key in TRAINING_SETTINGS if changes.get(key, "none") != "none"]
        kind, step, other = "a training", "runs inference", "train"
    if given:
        key = given[0]
        raise InputError(source, key, f"{option(key)} is {kind} setting, but the step {step} "
                                      f"(mode {mode}): give {option('mode', other)}, or leave "
                                      f"{option(key)} out")
    if "logits" in changes and phase == "decode":
        raise InputError(source, "logits", f"{option('logits')} is a prefill setting (every "
                                           f"token's logits or each sequence's last), but the "
                                           f"step decodes ({option('phase', 'decode')}: one "
                                           f"new token a sequence, its logits alone): give "
                                           f"{option('phase', 'prefill')}, or leave "
                                           f"{option('logits')} out")
