"""Imports point down the layers of :mod:`asmevo.layers`, and no modules import each other
in a circle.

The graph is read from the AST of every ``.py`` under asmevo/, operators/ and archive/
(the source folders of asmevo, asmevo.operators and asmevo.archive), imports inside
functions included: a function-level import that closes a cycle is still a cycle, only
deferred to run time.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from asmevo.layers import LAYERS, ROOTS, SOURCES, layer_of, part_of

REPO = Path(__file__).resolve().parents[1]


def module_files(repo: Path) -> dict[str, Path]:
    """Dotted module name (as imported: operators/x.py is asmevo.operators.x) -> file,
    for every module of the layered packages."""
    mods = {}
    for folder, package in SOURCES.items():
        for path in sorted((repo / folder).rglob("*.py")):
            parts = path.relative_to(repo / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join((package,) + parts)] = path
    return mods


def _imported(module: str, path: Path, node: ast.stmt) -> list[str]:
    """The dotted names an import statement may load (a module or a name in one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def import_edges(repo: Path) -> list[tuple[str, int, str]]:
    """(importing module, line, imported module) for every import between two
    modules of the layered packages; a module importing its own package is left
    out (Python has loaded the package before the module anyway)."""
    mods = module_files(repo)
    edges = set()
    for module, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in _imported(module, path, node):
                while name and name not in mods:
                    name = name.rpartition(".")[0]
                if name and name != module and not module.startswith(name + "."):
                    edges.add((module, node.lineno, name))
    return sorted(edges)


def upward_imports(repo: Path) -> list[str]:
    """One line per import that points up a layer, naming file and line."""
    mods = module_files(repo)
    out = []
    for module, line, target in import_edges(repo):
        lo, hi = layer_of(module), layer_of(target)
        if lo is not None and hi is not None and hi > lo:
            out.append(f"{mods[module].relative_to(repo)}:{line}: {module} "
                       f"({LAYERS[lo][0]}) imports {target} ({LAYERS[hi][0]})")
    return out


def cycles(repo: Path) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {m: set() for m in module_files(repo)}
    for module, _, target in import_edges(repo):
        graph[module].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_every_module_has_a_layer():
    unplaced = [m for m in module_files(REPO) if layer_of(m) is None]
    assert not unplaced, f"modules in no layer of asmevo/layers.py: {unplaced}"


def test_every_folder_of_modules_is_a_package():
    """setup.cfg's ``packages = find:`` leaves out a folder without __init__.py."""
    loose = [str(d.relative_to(REPO)) for root in SOURCES for d in (REPO / root).rglob("*")
             if d.is_dir() and any(d.glob("*.py")) and not (d / "__init__.py").exists()]
    assert not loose, f"folders of modules without __init__.py: {loose}"


def test_no_import_points_up_a_layer():
    bad = upward_imports(REPO)
    assert not bad, "imports that point up a layer:\n" + "\n".join(bad)


def test_no_import_cycle_between_modules():
    found = cycles(REPO)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def package_cycles(repo: Path) -> list[list[str]]:
    """Groups of top-level packages that import each other in a circle (through any
    modules): each pair of packages where each reaches the other."""
    reach = {r: set() for r in ROOTS}
    for module, _, target in import_edges(repo):
        a, b = part_of(module), part_of(target)
        if a != b:
            reach[a].add(b)
    for _ in ROOTS:                     # transitive closure over the three parts
        for r in ROOTS:
            reach[r] |= {c for b in reach[r] for c in reach[b]}
    groups = {tuple(sorted({r} | {o for o in reach[r] if r in reach[o]})) for r in ROOTS
              if r in reach[r]}
    return sorted(list(g) for g in groups)


def bare_source_imports(repo: Path) -> list[str]:
    """Imports of ``operators``/``archive`` by their folder names: those would load the
    same files a second time as other modules (asmevo.operators is the name)."""
    bare = tuple(f for f, p in SOURCES.items() if p != f)
    out = []
    files = [p for folder in (*SOURCES, "tests", "experiments")
             for p in (repo / folder).rglob("*.py")]
    for path in sorted(files):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            out += [f"{path.relative_to(repo)}:{node.lineno}: {n}" for n in names
                    if n and n.split(".")[0] in bare]
    return out


def test_nothing_imports_a_source_folder_by_its_folder_name():
    bad = bare_source_imports(REPO)
    assert not bad, ("imports of operators/archive by their folder names (their package "
                     "names are asmevo.operators, asmevo.archive):\n" + "\n".join(bad))


def test_an_import_by_folder_name_is_named(tmp_path):
    repo = _tree(tmp_path, {"tests/test_x.py": "def f():\n    from archive.old import A\n",
                            "operators/a.py": ("import operators.b as b\n"
                                               "from asmevo.archive import x\n")})
    assert bare_source_imports(repo) == ["operators/a.py:1: operators.b",
                                         "tests/test_x.py:2: archive.old"]


def test_no_import_cycle_between_packages():
    found = package_cycles(REPO)
    assert not found, "packages importing each other: " + "; ".join(" ".join(c) for c in found)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for root in SOURCES:
        (tmp_path / root).mkdir(exist_ok=True)
        (tmp_path / root / "__init__.py").touch()
    return tmp_path


def test_an_upward_import_inside_a_function_is_named_with_file_and_line(tmp_path):
    repo = _tree(tmp_path, {
        "asmevo/verdict.py": "def f():\n    from asmevo.verify import evaluate\n",
        "asmevo/verify/__init__.py": "",
        "asmevo/verify/evaluate.py": "from asmevo.verdict import f\n",
    })
    assert upward_imports(repo) == [
        "asmevo/verdict.py:2: asmevo.verdict (values) imports asmevo.verify (verify)",
        "asmevo/verdict.py:2: asmevo.verdict (values) imports asmevo.verify.evaluate (verify)"]
    assert cycles(repo) == [["asmevo.verdict", "asmevo.verify.evaluate"]]


@pytest.mark.parametrize("text", ["from . import b\n", "from .b import x\n",
                                  "import asmevo.emu.b\n"])
def test_a_registry_cycle_in_one_layer_is_found(tmp_path, text):
    repo = _tree(tmp_path, {
        "asmevo/emu/__init__.py": "",
        "asmevo/emu/a.py": text,
        "asmevo/emu/b.py": "from asmevo.emu.a import x\n",
    })
    assert upward_imports(repo) == []
    assert cycles(repo) == [["asmevo.emu.a", "asmevo.emu.b"]]


def test_a_cycle_between_packages_is_found(tmp_path):
    repo = _tree(tmp_path, {
        "archive/store.py": "def f():\n    from asmevo.verdict import Evaluation\n",
        "asmevo/verdict.py": "Evaluation = 1\n",
        "asmevo/engine.py": "import asmevo.archive.store\n",
    })
    assert cycles(repo) == []
    assert package_cycles(repo) == [["asmevo", "asmevo.archive"]]
