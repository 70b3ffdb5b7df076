"""Every package in the tree is installed: pyproject's explicit package list must name each one."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_directory_is_in_pyprojects_package_list():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    for package, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            name = ".".join((package, *init.parent.relative_to(ROOT / folder).parts))
            assert name in listed, f"{name} ({init.parent}) is missing from pyproject's packages"
