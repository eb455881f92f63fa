"""No import circles in the package, counting every import anywhere in a module: at the top, inside
functions, under `if TYPE_CHECKING:`. A circle that only works because one side imports late is
still two modules that cannot be read (or moved) one without the other. The graph is read from the
source (ast), so nothing is imported to build it.

One block is a node of its own: `if __name__ == "__main__":` runs only in the module `python -m`
makes of the file (`__main__`), a module nothing imports, so what it imports cannot close a circle
(`python -m gui_r1_lite.evaluate` hands over to `evaluate_cli` there, which imports `evaluate`).

Also read from the source: the package never imports what lives beside it, and the fast tier (`make test`)
loads every module of the package and of the harness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gui_r1_lite"
#: The package beside it that runs and proves the method (the main job, the miniature, the closed loop).
HARNESS = PACKAGE.parent / "harness"


def module_name(path: Path, root: Path) -> str:
    """`gui_r1_lite.training.config` for `<root>/gui_r1_lite/training/config.py` (a package: its
    `__init__.py`'s folder)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_script_block(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` at a module's top level."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def imported_modules(path: Path, name: str, known: set[str]) -> dict[str, set[str]]:
    """The modules of `known` that the module `name` (source at `path`) imports anywhere, as
    `{name: modules}`, plus `{name + ":__main__": modules}` for its `if __name__ == "__main__":` block.
    `from X import y` imports `X.y` when that is a module, else `X`; relative imports are resolved
    against `name`'s package. Importing a module also runs the `__init__` of each package above it
    that `name` is not itself inside, so those count too."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    script = [node for node in tree.body if _is_script_block(node)]
    module = [node for node in tree.body if node not in script]
    out = {name: _imports(module, name, package, known)}
    if script:
        out[f"{name}:__main__"] = _imports(script, name, package, known)
    return out


def _imports(nodes: list[ast.stmt], name: str, package: str, known: set[str]) -> set[str]:
    found: set[str] = set()
    for node in (n for top in nodes for n in ast.walk(top)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                above = ".".join(parts[:i])
                if above in known and (above == target or not (name == above or name.startswith(above + "."))):
                    found.add(above)
    found.discard(name)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports (see `imported_modules`)."""
    root = package.parent
    files = {module_name(p, root): p for p in sorted(package.rglob("*.py"))}
    return {k: v for name, path in files.items() for k, v in imported_modules(path, name, set(files)).items()}


def circle_groups(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (Tarjan's strongly connected
    components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per group of `circle_groups`, as a path from its first module back to it."""
    return [_path_through(graph, group) for group in circle_groups(graph)]


def _path_through(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest circle from the group's first module back to itself, within the group (breadth first)."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    return group  # not reached: a strongly connected group has a circle through each member


@pytest.mark.parametrize("package", [PACKAGE, HARNESS], ids=lambda p: p.name)
def test_the_package_has_no_import_circle(package):
    graph = import_graph(package)
    found = [f"{' -> '.join(_path_through(graph, g))}   (all of: {', '.join(g)})" for g in circle_groups(graph)]
    assert not found, "import circles:\n" + "\n".join(found)


@pytest.mark.parametrize("files, circle", [
    # the two kinds the package had: a function-level import back, and a three-module ring
    ({"evaluate.py": "def main():\n    from .suite import run\n", "suite.py": "from .evaluate import main\n"},
     ["pkg.evaluate", "pkg.suite", "pkg.evaluate"]),
    ({"t/__init__.py": "", "t/config.py": "from .checks import c\n", "t/checks.py": "from . import flags\n",
      "t/flags.py": "import pkg.t.config\n"},
     ["pkg.t.checks", "pkg.t.flags", "pkg.t.config", "pkg.t.checks"]),
    # importing a submodule runs its package's __init__ first, which may import the importer
    ({"record.py": "from .t.config import C\n", "t/__init__.py": "from .trainer import T\n",
      "t/trainer.py": "from ..record import R\n", "t/config.py": ""},
     ["pkg.record", "pkg.t", "pkg.t.trainer", "pkg.record"]),
])
def test_a_circle_is_found_and_printed(tmp_path, files, circle):
    package = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert cycles(import_graph(package)) == [circle]


def test_a_package_importing_its_own_modules_is_no_circle(tmp_path):
    # training/__init__.py imports training.trainer, which imports training.checkpoints: Python has
    # the package half-made already, nothing runs twice
    package = tmp_path / "pkg"
    (package / "t").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "t" / "__init__.py").write_text("from .trainer import T\n")
    (package / "t" / "trainer.py").write_text("from .checkpoints import c\nfrom . import checkpoints\n")
    (package / "t" / "checkpoints.py").write_text("import os\n")
    assert cycles(import_graph(package)) == []
    assert import_graph(package)["pkg.t.trainer"] == {"pkg.t.checkpoints"}


def test_a_script_blocks_import_is_the_scripts_not_the_modules(tmp_path):
    # `python -m pkg.evaluate` runs the block in a module of its own (__main__), which nothing imports
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text("from .evaluate import main\n")
    (package / "evaluate.py").write_text('def main():\n    pass\n\n\nif __name__ == "__main__":\n'
                                         '    from .cli import main\n')
    graph = import_graph(package)
    assert graph["pkg.evaluate"] == set() and graph["pkg.evaluate:__main__"] == {"pkg.cli"}
    assert cycles(graph) == []
    (package / "evaluate.py").write_text("def main():\n    from .cli import main\n")  # inside a function: counted
    assert cycles(import_graph(package)) == [["pkg.cli", "pkg.evaluate", "pkg.cli"]]


#: The top-level folders beside the package: what runs and proves the method (harness/), and tools that made
#: data or ran studies, which import the package.
BESIDE = ("harness", "capture", "study", "grounding", "scripts", "benchmarks", "tests")


@pytest.mark.parametrize("package, beside", [(PACKAGE, BESIDE), (HARNESS, BESIDE[1:])], ids=["gui_r1_lite", "harness"])
def test_the_package_never_imports_what_lives_beside_it(package, beside):
    """The boundary of the README's module map: nothing in `gui_r1_lite/` imports a folder beside it, and
    `harness/` imports only the package (not the tools that made data or ran studies), at the top or inside a
    function."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(package.parent)}: {n}" for n in names if n.split(".")[0] in beside]
    assert not found, found
    assert all((package.parent / name).is_dir() for name in beside)


# --- the fast tier (`make test`, `-m "not slow"`) imports every module ------------------------------------------
# What a test file imports (anywhere in it: a test that imports inside its body runs that import) and what each
# of those modules imports as it loads (at its top, in class bodies and `try` blocks, not inside functions nor
# under `if TYPE_CHECKING:`), followed to the end; `python -m X` in a test's command runs X's `__main__` block
# too. A file counts unless every test in it is `slow` (a module-level `pytestmark` or each test's mark).


def eager_imports(body: list[ast.stmt]) -> list[ast.stmt]:
    """The import statements of `body` that run when the module loads."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or _is_script_block(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found += eager_imports(node.orelse)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(node, field, None)
                if isinstance(block, list):
                    found += eager_imports(block)
    return found


def load_graph(packages: tuple[Path, ...]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> the modules it imports as it loads, module -> those its `__main__` block imports)."""
    files = {module_name(p, pkg.parent): p for pkg in packages for p in sorted(pkg.rglob("*.py"))}
    loads, scripts = {}, {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        body = ast.parse(path.read_text(encoding="utf-8")).body
        loads[name] = _imports(eager_imports(body), name, package, set(files))
        scripts[name] = _imports([n for n in body if _is_script_block(n)], name, package, set(files))
    return loads, scripts


def entirely_slow(tree: ast.Module) -> bool:
    """Every test of the file is marked `slow`: by a module-level `pytestmark`, or each test (function or
    class) by its own mark. A file without tests (conftest, helpers) is not."""
    def slow(node) -> bool:
        return "mark.slow" in ast.unparse(node)

    marks = [n.value for n in tree.body
             if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in n.targets)]
    if any(slow(mark) for mark in marks):
        return True
    tests = [n for n in tree.body if (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith(
        "test")) or (isinstance(n, ast.ClassDef) and n.name.startswith("Test"))]
    return bool(tests) and all(any(slow(d) for d in n.decorator_list) for n in tests)


def module_runs(tree: ast.Module, known: set[str]) -> set[str]:
    """The modules a test file runs as `python -m X` (X's `__main__` when X is a package): "-m" then X, in one
    list or tuple of its source."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            for flag, target in zip(words, words[1:], strict=False):
                if flag == "-m" and isinstance(target, str):
                    found |= {m for m in (f"{target}.__main__", target) if m in known}
    return found


def fast_tier_imports(tests: Path, packages: tuple[Path, ...]) -> dict[str, list[str]]:
    """module -> the test files not entirely slow that import it (directly or through what they import)."""
    loads, scripts = load_graph(packages)
    known = set(loads)
    covered: dict[str, list[str]] = {}
    for path in sorted(tests.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if entirely_slow(tree):
            continue
        ran = module_runs(tree, known)
        todo = [*_imports(tree.body, f"{tests.name}.{path.stem}", tests.name, known), *ran,
                *(m for r in ran for m in scripts[r])]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo += loads[name]
        for name in seen:
            covered.setdefault(name, []).append(path.name)
    return covered


def test_the_fast_tier_imports_every_module_of_the_package_and_the_harness():
    loads, _ = load_graph((PACKAGE, HARNESS))
    covered = fast_tier_imports(PACKAGE.parent / "tests", (PACKAGE, HARNESS))
    missing = sorted(set(loads) - set(covered))
    assert not missing, f"imported by no test file outside the slow tier (`make test` never loads them): {missing}"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("source, slow", [
    ("import pytest\npytestmark = pytest.mark.slow\ndef test_a():\n    pass\n", True),
    ("import pytest\npytestmark = [pytest.mark.browser, pytest.mark.slow]\ndef test_a():\n    pass\n", True),
    ("import pytest\n@pytest.mark.slow\ndef test_a():\n    pass\n@pytest.mark.slow\nclass TestB:\n    pass\n", True),
    ("import pytest\n@pytest.mark.slow\ndef test_a():\n    pass\ndef test_b():\n    pass\n", False),
    ("import pytest\npytestmark = pytest.mark.gpu\ndef test_a():\n    pass\n", False),
    ("import pytest\n\n@pytest.fixture\ndef helper():\n    pass\n", False),  # no test: a conftest or helpers
])
def test_a_file_is_entirely_slow_only_when_every_test_in_it_is(source, slow):
    assert entirely_slow(ast.parse(source)) is slow


def test_the_fast_tier_check_follows_imports_and_runs_and_leaves_out_slow_files(tmp_path):
    package = _tree(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from . import b\ntry:\n    from . import c\nexcept ImportError:\n    c = None\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import late\n",
        "c.py": "", "late.py": "",
        "lazy.py": "def f():\n    from . import only_called\n", "only_called.py": "",
        "tool/__init__.py": "", "tool/__main__.py": 'if __name__ == "__main__":\n    from ..d import main\n',
        "d.py": "", "slow_only.py": ""})
    tests = _tree(tmp_path / "tests", {
        "test_fast.py": "import pkg.a\n\ndef test_x():\n    import pkg.lazy\n",
        "test_cmd.py": 'def test_y():\n    run(["python", "-m", "pkg.tool"])\n',
        "test_slow.py": "import pytest\nimport pkg.slow_only\npytestmark = pytest.mark.slow\n\ndef test_z():\n    pass\n"})
    covered = fast_tier_imports(tests, (package,))
    assert sorted(covered) == ["pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.lazy", "pkg.tool", "pkg.tool.__main__"]
    assert covered["pkg.b"] == ["test_fast.py"] and covered["pkg.d"] == ["test_cmd.py"]
