"""The docs describe the code that exists: every --json key is documented, every documented command runs."""

import re
from pathlib import Path

from conftest import FIXTURES, ROOT

from mgpu_io.inspection import inspect
from mgpu_io.unwrap import UnwrapReport

CLI_DOC = (ROOT / "docs" / "cli.md").read_text()


def test_every_inspect_json_key_is_documented():
    keys = inspect(FIXTURES / "k224_functional_bn_x2_full.h5").to_dict()
    for key in keys:
        assert f"| `{key}` |" in CLI_DOC, key


def test_every_unwrap_json_key_is_documented():
    for key in UnwrapReport.__dataclass_fields__:
        assert f"`{key}`" in CLI_DOC, key


def test_every_normalisation_change_is_documented():
    source = "\n".join(p.read_text() for p in (ROOT / "mgpu_io").glob("*.py"))
    names = set(re.findall(r'changes\.append\("([a-z0-9-]+)"\)', source))
    names |= set(re.findall(r'return "(hard-sigmoid[a-z-]*)"', source))
    assert names, "the pattern no longer finds the change names"
    for name in names:
        assert f"`{name}`" in CLI_DOC, name


def test_the_readme_starts_with_the_two_setup_commands():
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```bash", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in first_block.strip().splitlines()] == ["make demo", "make test"]


def test_the_demo_fixture_exists():
    makefile = (ROOT / "Makefile").read_text()
    demo_input = re.search(r"^DEMO_IN := (\S+)", makefile, re.M).group(1)
    assert (ROOT / demo_input).is_file()
    assert Path(FIXTURES / "manifest.json").is_file()
