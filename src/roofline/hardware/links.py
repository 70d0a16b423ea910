"""Named links (``links.yaml`` beside this module): host links and interconnects, each with its
bandwidth per direction, basis and source, and for interconnects their tier (``intra``: GPUs of
one node; ``inter``: between nodes; ``host``: CPU to GPU) and the latency of one collective step
(NCCL's model). Data, no arithmetic: the collectives are ``analysis.collectives``."""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass

from ..errors import InputError
from ..files.fields import Fields, load_yaml_text
from ..files.numbers import parse_number, plausible, quoted

LINKS_FILE = "links.yaml"


@dataclass(frozen=True)
class Link:
    """A named link from links.yaml (or a bare bandwidth: ``name`` is then the number)."""

    name: str
    label: str
    type: str
    bandwidth_gbs: float
    basis: str = ""
    generation: int | None = None
    tier: str = ""  # intra | inter | host; "" for a bare bandwidth
    latency_us: float = 0.0  # per step of a ring collective; 0 when not stated
    node_gpus: int | None = None  # the GPUs a switched link joins in one node; None: any
    # whether the GPUs on the link read each other's memory (peer-to-peer); False where the
    # boards cannot over PCIe (``gpu.pcie_p2p``, set by ``analysis.plan.make_fabric``)
    p2p: bool = True


@functools.lru_cache(maxsize=1)
def links() -> dict[str, Link]:
    """Every named link in ``links.yaml``, by name."""
    text = importlib.resources.files("roofline.hardware").joinpath(LINKS_FILE).read_text("utf-8")
    top = Fields(load_yaml_text(text, LINKS_FILE), LINKS_FILE)
    table = top.sub("links")
    out = {}
    for name in table.data:
        entry = table.sub(name)
        entry.reject_unknown(frozenset({"label", "type", "generation", "bandwidth_gbs",
                                        "basis", "source", "tier", "latency_us",
                                        "source_latency", "node_gpus"}))
        for key in ("source", "source_latency"):  # every figure has a source
            if key == "source" or entry.has("latency_us"):
                source = entry.sub(key)
                source.string("title"), source.string("url")
        for key in ("bandwidth_gbs", "latency_us"):
            problem = plausible(entry.positive_number(key, 0.0), key) if entry.has(key) else None
            if problem:
                raise entry.fail(key, problem)
        out[name] = Link(name, entry.string("label"),
                         entry.choice("type", ("pcie", "nvlink", "ethernet", "infiniband")),
                         entry.positive_number("bandwidth_gbs"), entry.string("basis"),
                         entry.positive_int("generation", None),
                         entry.choice("tier", ("intra", "inter", "host"), ""),
                         entry.positive_number("latency_us", 0.0),
                         entry.positive_int("node_gpus", None))
    return out


def resolve_link(value: str, field: str) -> Link:
    """``NAME`` (a links.yaml entry) or ``GBPS`` (a positive number of GB/s per direction; no
    latency term)."""
    known = links()
    if value in known:
        return known[value]
    try:
        gbs = parse_number(value)
    except ValueError:
        raise InputError(field, "", f"unknown link {quoted(value)} (known: {', '.join(known)}; "
                                    f"or a bandwidth in GB/s)") from None
    if not gbs > 0:
        raise InputError(field, "", f"expected a positive bandwidth in GB/s, got {quoted(value)}")
    problem = plausible(gbs, "bandwidth_gbs", value)  # the range of every bandwidth given
    if problem:
        raise InputError(field, "", problem)
    return Link(f"{gbs:g}", f"{gbs:g} GB/s", "custom", gbs)
