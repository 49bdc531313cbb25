"""The repository runs from any clone: no tracked text file holds a path of the machine it was written on (the
checkout's own absolute root, the folder it lies in, the user's home), only paths relative to the repository or
``../shared``."""

import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers import ROOT

TEXT = (".py", ".md", ".sh", ".toml", ".json", ".txt", ".yaml", ".yml", ".cfg", ".ini", "Makefile", "run")


def machine_prefixes(root):
    """The absolute folders of this machine a tracked file must not name: the checkout, the folder holding it (where
    ``../shared`` and environments made beside it lie) unless that is the root or the system's temporary folder,
    and the home folder."""
    root = Path(root).resolve()
    folders = {root, Path.home().resolve()}
    if root.parent not in (Path(root.anchor), Path(tempfile.gettempdir()).resolve()):
        folders.add(root.parent)
    return sorted(f"{folder}/" for folder in folders if folder != Path(root.anchor))


def lines_naming(text, prefixes):
    """The numbers of ``text``'s lines that name a path under one of ``prefixes``."""
    return [n for n, line in enumerate(text.splitlines(), 1) if any(prefix in line for prefix in prefixes)]


def test_no_tracked_text_file_holds_a_path_of_this_machine():
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    prefixes = machine_prefixes(ROOT)
    found = [f"{name}:{n}" for name in listed.splitlines() if name.endswith(TEXT) and (ROOT / name).is_file()
             for n in lines_naming((ROOT / name).read_text(errors="replace"), prefixes)]
    assert found == [], f"paths under {prefixes}: use paths relative to the repository or ../shared"


def test_the_check_names_the_checkout_the_folder_beside_it_and_home_but_not_the_temporary_folder(tmp_path):
    checkout = tmp_path / "work" / "main"
    checkout.mkdir(parents=True)
    prefixes = machine_prefixes(checkout)
    text = f"ENVS=${{ENVS:-{checkout.parent}/envs/writers}}\nsee ../shared/docs\nrun {checkout}/x.py\n"
    assert lines_naming(text, prefixes) == [1, 3]
    in_temp = Path(tempfile.gettempdir()) / "ci-clone"
    assert f"{Path(tempfile.gettempdir()).resolve()}/" not in machine_prefixes(in_temp)
