"""The largest functions of mgpu_io: lines and branches of each, read with ``ast`` (issue 34's "largest functions").

A function's lines run from its ``def`` to its last line, docstring and nested functions included; its body lines
from the first statement after the docstring (a command's parameters and help are not body); its branches are
the decisions in that span: each ``if``/``elif``, conditional expression, loop, ``except``, ``case``, comprehension
``for`` and ``if``, and each ``and``/``or`` beyond the first operand. A nested function is listed on its own too
(``outer.inner``).

Usage: python tests/benchmarks/function_sizes.py [--top N] [--by lines|body|branches] [--json] [--root CHECKOUT]
"""

import argparse
import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_DECISIONS = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.match_case)


def branches(node):
    """The decisions in ``node``'s span (see the module's docstring)."""
    count = 0
    for child in ast.walk(node):
        if isinstance(child, _DECISIONS):
            count += 1
        elif isinstance(child, ast.BoolOp):
            count += len(child.values) - 1
        elif isinstance(child, ast.comprehension):
            count += 1 + len(child.ifs)
    return count


def _body_start(function):
    body = function.body
    documented = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    first = body[1] if documented and len(body) > 1 else body[0]
    return first.lineno


def functions(root=ROOT):
    """``[{"name", "file", "line", "lines", "body", "branches"}]`` for every function under ``root / "mgpu_io"``."""
    found = []
    package = Path(root) / "mgpu_io"
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))

        def visit(node, prefix, path=path):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{prefix}{child.name}"
                    found.append(
                        {
                            "name": name,
                            "file": str(path.relative_to(root)),
                            "line": child.lineno,
                            "lines": child.end_lineno - child.lineno + 1,
                            "body": child.end_lineno - _body_start(child) + 1,
                            "branches": branches(child),
                        }
                    )
                    visit(child, name + ".")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")
                else:
                    visit(child, prefix)

        visit(tree, "")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--by", choices=("lines", "body", "branches"), default="lines")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--root", default=str(ROOT), help="the checkout measured (another commit's)")
    arguments = parser.parse_args()
    largest = sorted(functions(Path(arguments.root)), key=lambda f: (-f[arguments.by], f["file"], f["line"]))
    largest = largest[: arguments.top]
    if arguments.json:
        print(json.dumps(largest, indent=1))
        return
    print(f"{'lines':>5} {'body':>5} {'branches':>8}  function")
    for f in largest:
        print(f"{f['lines']:>5} {f['body']:>5} {f['branches']:>8}  {f['file']}:{f['line']} {f['name']}")


if __name__ == "__main__":
    main()
