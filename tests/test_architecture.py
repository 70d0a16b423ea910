"""The package's shape: subsystem packages in one order, each importing only the layers below it
(every import counts, function-level ones included), and no cycle among module-level imports.
docs/design.md's package table is the same order in words."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parent.parent / "src" / "roofline"

# Lowest first. A module may import its own layer and the layers before it, never after.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("roofline", "roofline.errors", "roofline.units", "roofline.roof"),
    ("roofline.files",),
    ("roofline.model",),
    ("roofline.hardware",),
    ("roofline.kernels",),
    ("roofline.analysis",),
    ("roofline.probe",),
    ("roofline.output",),
    ("roofline.plot",),
    ("roofline.api", "roofline.torch"),
    ("roofline.cli", "roofline.__main__"),
)

# The one named exception: hooks on results reach up to a renderer or a chart (Jupyter's
# _repr_html_ and .plot(), and GemmResult.warnings / .advice, whose sentences output/ makes).
UPWARD_ALLOWED = {
    ("roofline.analysis.report", "roofline.output.html"),     # Report._repr_html_
    ("roofline.analysis.report", "roofline.output.advice"),   # GemmResult.warnings, .advice,
                                                              # Report.warnings
    ("roofline.probe.result", "roofline.output.probe_notes"),  # ProbeResult.to_dict
    ("roofline.analysis.report", "roofline.plot"),            # Report.plot()
    ("roofline.analysis.whatif_comparison", "roofline.plot"),         # Comparison.plot()
    ("roofline.analysis.whatif_comparison", "roofline.output.html"),  # Comparison._repr_html_
    ("roofline.analysis.whatif_sweep", "roofline.plot"),              # Sweep.plot()
    ("roofline.analysis.whatif_sweep", "roofline.output.html"),       # Sweep._repr_html_
    ("roofline.analysis.plan", "roofline.plot"),                      # Plan.plot()
    ("roofline.analysis.plan", "roofline.output.html"),               # Plan._repr_html_
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = SRC.parent / name.replace(".", "/")
    return base.with_suffix(".py").exists() or base.is_dir()


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """roofline modules that ``path`` imports: module level only, or every import anywhere
    (functions, methods, TYPE_CHECKING blocks)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("roofline"):
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names
                             if _is_module(f"{target}.{a.name}"))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("roofline"))
    # a module's own package (and its ancestors) are being initialised already: not an edge
    return {t for t in found if t != name and not name.startswith(t + ".")}


def _rank(module: str) -> int:
    best = (-1, -1)
    for rank, layer in enumerate(LAYERS):
        for prefix in layer:
            if module == prefix or module.startswith(prefix + "."):
                best = max(best, (len(prefix), rank))
    assert best[1] >= 0, f"{module} belongs to no layer: add it to LAYERS"
    return best[1]


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_import_points_down_the_layer_order():
    wrong = []
    for path in _modules():
        module = _module_name(path)
        if module == "roofline":  # the facade: names for type checkers, imported lazily
            continue
        for target in sorted(_imports(path, top_level_only=False)):
            if target == "roofline" or (module, target) in UPWARD_ALLOWED:
                continue
            if _rank(target) > _rank(module):
                wrong.append(f"{module} imports {target}")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


def test_the_facade_is_the_only_import_of_the_root_package():
    """``from roofline import X`` inside the package would load the facade's lazy names
    in an order nobody chose; ``__version__`` is the one name read that way."""
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level and not node.module:
                module = _module_name(path)
                package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
                if package.count(".") + 1 == node.level:
                    names = [a.name for a in node.names if not _is_module(f"roofline.{a.name}")]
                    assert names in ([], ["__version__"]), module


def test_module_level_imports_have_no_cycle():
    graph = {_module_name(p): _imports(p, top_level_only=True) for p in _modules()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        if state.get(node) == 2:
            return
        assert state.get(node) != 1, "import cycle: " + " -> ".join(trail + [node])
        state[node] = 1
        for child in sorted(graph.get(node, ())):
            visit(child, trail + [node])
        state[node] = 2

    for module in sorted(graph):
        visit(module, [])


def test_the_layer_check_sees_function_level_imports(tmp_path):
    """A guard on the guard: an import inside a function is an edge like any other."""
    sample = SRC / "analysis" / "report.py"
    inside = _imports(sample, top_level_only=False) - _imports(sample, top_level_only=True)
    assert "roofline.plot" in inside


def test_the_facade_lists_every_lazy_name_and_imports_none():
    import subprocess
    import sys

    import roofline

    assert sorted(roofline.__all__) == sorted([*roofline._WHERE, "__version__"])
    code = "import sys, roofline; print(sorted(m for m in sys.modules if m.startswith('roofline')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    assert loaded.strip() == "['roofline']"
