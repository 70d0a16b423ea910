"""The package's shape: module-level imports flow one way (no cycles), so each concept has one
home that others import, never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parent.parent / "src" / "roofline"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(path: Path) -> set[str]:
    """roofline modules imported at module level (not inside functions or TYPE_CHECKING)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("roofline"):
                names = [f"{target}.{a.name}" for a in node.names]
                found.add(target)
                found.update(n for n in names if (SRC.parent / n.replace(".", "/")).with_suffix(
                    ".py").exists() or (SRC.parent / n.replace(".", "/")).is_dir())
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("roofline"))
    # a module's own package (and its ancestors) are being initialised already: not an edge
    return {t for t in found if t != name and not name.startswith(t + ".")}


def test_module_level_imports_have_no_cycle():
    graph = {_module_name(p): _top_level_imports(p) for p in SRC.rglob("*.py")}
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


def test_format_and_plot_import_analysis_for_types_only():
    for module in ("format.py", "plot.py", "json_output.py"):
        assert "roofline.analysis" not in _top_level_imports(SRC / module), module
