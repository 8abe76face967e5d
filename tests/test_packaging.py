"""The wheel carries every subpackage, the themes and, where a C compiler is, the W&B walk built."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_for_the_wheel() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "steptable").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert conf["package-dir"]["steptable.themes"] == "themes"
    assert {"dark.tcss", "light.tcss", "high-contrast.tcss"} <= {p.name for p in (ROOT / "themes").glob("*.tcss")}


def test_an_installed_package_finds_the_themes_it_carries(tmp_path: Path) -> None:
    """Laid out as the wheel installs it (steptable/themes/*.tcss, no repository beside it), the app finds its themes
    (the resource path of the themes' namespace package must not be read as "MultiplexedPath('...')")."""
    import shutil
    import subprocess

    site = tmp_path / "site"
    shutil.copytree(ROOT / "steptable", site / "steptable", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "themes", site / "steptable" / "themes")
    code = ("import steptable; from steptable.app.themes import load_themes; "
            "print(steptable.__file__); print(sorted(load_themes()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": ""},
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith(str(site)), out
    assert out[1] == "['dark', 'high-contrast', 'light']"


def test_the_wandb_walk_is_built_where_a_compiler_is() -> None:
    """The W&B reader's walk in C is an optional extension: a failed build leaves the reader about three times slower
    without a word, so where a C compiler is, the installed package must hold it."""
    import importlib
    import shutil

    import pytest

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    (ext,) = conf["ext-modules"]
    assert ext["name"] == "steptable.ingest.readers._wandbwalk" and ext["optional"] is True
    assert all((ROOT / src).is_file() for src in ext["sources"] + ext["depends"])
    assert {p.name for p in (ROOT / "csrc" / "wandbwalk").iterdir()} == {
        Path(src).name for src in ext["sources"] + ext["depends"]}  # (every part built, every header in the sdist)
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the reader walks the chunks in Python")
    importlib.import_module(ext["name"])
