"""docs/architecture.md is checked against the code, whatever either says: every module, folder and name the page
points to exists, and each floor of its table imports only what its row says (and at module level only what it
does not say is imported inside functions).

Nothing here lists the modules: the page is parsed, so that a module renamed in the code and on the page passes,
and one renamed in only one of them fails with the path the page still names.
"""

import ast
import re
import sys

from helpers import ROOT

PACKAGE = ROOT / "mgpu_io"
PAGE = ROOT / "docs" / "architecture.md"

#: How the page names a package in a floor's "imports" column.
SPELLED = {"h5py": "h5py", "numpy": "NumPy", "yaml": "PyYAML", "keras": "Keras", "tensorflow": "TensorFlow",
           "tf_keras": "tf_keras", "typer": "typer", "rich": "rich", "jax": "JAX", "torch": "PyTorch"}


def _code_spans():
    return re.findall(r"`([^`\n]+)`", PAGE.read_text())


def _resolve(name):
    """The file or folder a page's ``name`` points to: relative to the package, its ``format/`` floor (the page
    writes ``conversions/x.py``), or the repository; a bare file name anywhere in the package."""
    name = name.rstrip("/")
    for base in (PACKAGE, PACKAGE / "format", ROOT):
        if (base / name).exists():
            return base / name
    if "/" not in name:
        found = sorted(PACKAGE.rglob(name))
        return found[0] if found else None
    return None


def _named_paths():
    paths = []
    for span in _code_spans():
        span = span.split("(")[0]  # `describe(path)` is a name, not a path
        if re.fullmatch(r"[\w./-]+\.py|[\w-]+(/[\w.-]+)*/|(mgpu_io|tests|fixtures|docs)/[\w./-]+", span) and not \
                re.search(r"\b[A-Z]{2,}\b", span):  # `format/conversions/NAME.py` is a pattern, not a path
            paths.append(span)
    return sorted(set(paths))


def test_every_module_and_folder_the_page_names_exists():
    paths = _named_paths()
    assert len(paths) > 20  # the pattern still finds the page's paths
    missing = [path for path in paths if _resolve(path) is None]
    assert missing == [], f"docs/architecture.md names what the code does not have: {missing}"


def _defined(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def test_every_name_the_page_gives_a_module_is_defined_there():
    """"`format/read.py`'s `open_stored`" and "`door.refusal`": the module defines that name."""
    text = PAGE.read_text()
    claims = re.findall(r"`([\w/]+\.py)`'s `(\w+)", text)
    claims += [(f"{module}.py", name) for module, name in re.findall(r"`(\w+)\.(\w+)`", text)
               if name != "py" and _resolve(f"{module}.py") is not None]
    assert len(claims) > 5
    wrong = [f"{module}: {name}" for module, name in claims if name not in _defined(_resolve(module))]
    assert wrong == [], f"docs/architecture.md gives modules names they do not define: {wrong}"


def _floors():
    """``{floor folder: its "imports" text}`` from the page's floors table."""
    rows = re.findall(r"^\| `(\w+)/` \| ([^|]+) \|", PAGE.read_text(), re.M)
    return dict(rows)


def _imports(path, top_level_only):
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
    return found


def test_the_floors_table_has_a_row_for_each_floor_of_the_package():
    floors = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert sorted(_floors()) == floors


def _import_problems(path, said, own, below, floors):
    """What ``path`` imports that ``said`` (a table row's "imports" text) does not name; ``own`` is its floor."""
    problems, where = [], path.relative_to(ROOT)
    inside_only = {package for package, word in SPELLED.items()
                   if re.search(rf"{word}( 3)? \(inside functions\)|{word} inside the functions", said)}
    for name in _imports(path, top_level_only=False):
        top = name.split(".")[0]
        if top == "mgpu_io":
            other = name.split(".")[1] if name.count(".") else ""
            if other in floors and other != own and not (
                    f"`{other}/`" in said or ("the floor" in said and "below" in said and other in below)):
                problems.append(f"{where} imports mgpu_io.{other}, which its row does not name")
        elif top not in sys.stdlib_module_names and top != "__future__" and SPELLED.get(top, top) not in said:
            problems.append(f"{where} imports {top}, which its row does not name")
    for name in _imports(path, top_level_only=True) & set(inside_only):
        problems.append(f"{where} imports {name} at module level; its row says inside functions")
    return problems


def test_each_floor_imports_only_what_its_row_says():
    """Each floor's modules against its row; ``lambdas/``'s modules each against their own row (the next test)."""
    floors = _floors()
    order = list(floors)
    problems = []
    for floor, said in floors.items():
        if floor == "lambdas":
            continue
        for path in sorted((PACKAGE / floor).rglob("*.py")):
            problems += _import_problems(path, said, floor, order[: order.index(floor)], floors)
    assert problems == [], "\n".join(problems)


def _lambda_rows():
    """``{module: (floor, its "imports" text)}`` from the page's table of the Lambda feature's modules."""
    rows = re.findall(r"^\| `lambdas/(\w+)\.py` \| (\w+) \| ([^|]+) \|", PAGE.read_text(), re.M)
    return {name: (floor, said) for name, floor, said in rows}


def test_each_module_of_the_lambda_package_has_its_row_and_imports_only_what_it_says():
    """The floors of mgpu_io/lambdas/ are per module: the page's table gives each module's floor (as the package's
    FLOORS does) and what it imports, checked as a floor's row is."""
    from mgpu_io.lambdas import FLOORS

    rows, floors = _lambda_rows(), _floors()
    assert {name: floor for name, (floor, _) in rows.items()} == FLOORS
    problems = []
    for name, (floor, said) in rows.items():
        path = PACKAGE / "lambdas" / f"{name}.py"
        problems += _import_problems(path, said, "lambdas", [], floors)
        if floor == "format":  # and what format/'s row forbids, whatever this row says
            problems += [f"{name}: imports {n}" for n in _imports(path, False) if n.split(".")[0] in (
                "keras", "tensorflow", "tf_keras", "typer", "rich") or n.startswith(("mgpu_io.keras", "mgpu_io.cli"))]
        elif floor == "keras":
            problems += [f"{name}: imports {n} at module level" for n in _imports(path, True)
                         if n.split(".")[0] in ("keras", "tensorflow", "tf_keras")]
    assert problems == [], "\n".join(problems)
