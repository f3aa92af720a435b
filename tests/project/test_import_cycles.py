"""No import cycles between the modules of pytest_ragdive.

Every module is read with ``ast`` (nothing is imported); every import counts,
lazy ones inside functions included, except those under ``if TYPE_CHECKING:``
(never executed). ``from . import x`` resolves to the submodule ``x`` when
there is one, else to the package. A cycle is a strongly connected component
of more than one module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_ragdive

PACKAGE_DIR = Path(pytest_ragdive.__file__).parent


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under ``root`` (the package ``package``)."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = path
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    skipped.update(id(n) for n in ast.walk(sub))
    return skipped


def imports_of(module: str, path: Path, modules: dict[str, Path], *, type_checking: bool = False) -> set[str]:
    """The modules of the package that ``module`` imports (anywhere in its code; ``type_checking``:
    those under ``if TYPE_CHECKING:`` too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    skipped = set() if type_checking else _type_checking_only(tree)
    found: set[str] = set()

    def resolve(name: str) -> str | None:
        # the longest prefix of ``name`` that is a module of the package
        parts = name.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in modules:
                return candidate
            parts.pop()
        return None

    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve(alias.name)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                target = resolve(f"{prefix}.{alias.name}") if alias.name != "*" else None
                target = target or resolve(prefix)
                if target:
                    found.add(target)
    found.discard(module)
    return found


def import_graph(root: Path, package: str, *, type_checking: bool = False) -> dict[str, set[str]]:
    modules = module_names(root, package)
    return {m: imports_of(m, p, modules, type_checking=type_checking) for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def describe(comps: list[list[str]], graph: dict[str, set[str]]) -> str:
    lines = []
    for comp in comps:
        members = set(comp)
        edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a] & members)]
        lines.append("cycle among " + ", ".join(comp) + ": " + "; ".join(edges))
    return "\n".join(lines)


def test_pytest_ragdive_has_no_import_cycles() -> None:
    graph = import_graph(PACKAGE_DIR, "pytest_ragdive")
    assert "pytest_ragdive.llm.client" in graph and "pytest_ragdive.metrics.judged.cascade" in graph
    found = cycles(graph)
    assert not found, describe(found, graph)


def test_no_import_cycle_counting_type_checking_imports() -> None:
    """The stricter reading (the project's before-stop check): an import under ``if TYPE_CHECKING:``
    counts too. plugin.preflight returns what it finds (Findings) and reads the session through a
    protocol, so it no longer imports plugin.session, which calls it (issue 32)."""
    graph = import_graph(PACKAGE_DIR, "pytest_ragdive", type_checking=True)
    assert "pytest_ragdive.plugin.session" not in graph["pytest_ragdive.plugin.preflight"]
    found = cycles(graph)
    assert not found, describe(found, graph)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def test_the_checker_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    pkg = tmp_path / "toy"
    _write(
        pkg,
        {
            "__init__.py": "",
            "a.py": "from .b import helper\n",
            # lazy, inside a function, and through "from . import a": still a cycle
            "sub/__init__.py": "",
            "b.py": "def helper():\n    from . import a\n    return a\n",
            "sub/c.py": "import toy.b\n",
            "sub/d.py": "from ..sub import c\n",
        },
    )
    graph = import_graph(pkg, "toy")
    assert graph["toy.b"] == {"toy.a"}
    assert graph["toy.sub.c"] == {"toy.b"} and graph["toy.sub.d"] == {"toy.sub.c"}
    assert cycles(graph) == [["toy.a", "toy.b"]]
    assert "toy.a -> toy.b" in describe(cycles(graph), graph)


def test_the_checker_ignores_type_checking_imports_and_passes_a_dag(tmp_path: Path) -> None:
    pkg = tmp_path / "toy"
    _write(
        pkg,
        {
            "__init__.py": "from .a import x\n",
            "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import y\nx = 1\n",
            "b.py": "from .a import x\ny = x\n",
        },
    )
    graph = import_graph(pkg, "toy")
    assert graph["toy.a"] == set() and graph["toy.b"] == {"toy.a"}
    assert cycles(graph) == []


@pytest.mark.parametrize("line", ["from . import b", "import toy.b", "from toy import b", "from .b import *"])
def test_every_import_form_resolves(tmp_path: Path, line: str) -> None:
    pkg = tmp_path / "toy"
    _write(pkg, {"__init__.py": "", "a.py": line + "\n", "b.py": "from . import a\n"})
    assert cycles(import_graph(pkg, "toy")) == [["toy.a", "toy.b"]]
