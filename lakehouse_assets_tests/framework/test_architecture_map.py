"""docs/architecture.md's layout map matches the tree: every module of the framework is named
there (under its folder's line or on it), and every file the map names exists."""

from __future__ import annotations

import re

import pytest

from lakehouse_assets_tests.framework.test_architecture import REPO

pytestmark = pytest.mark.unit

MAP = REPO / "docs" / "architecture.md"


def layout_block() -> str:
    text = MAP.read_text()
    section = text.split("## Layout", 1)[1]
    return section.split("```", 2)[1]


def named_files(block: str) -> set[str]:
    return set(re.findall(r"\b([a-z_][a-z0-9_]*\.py)\b", block))


def test_every_framework_module_is_on_the_map() -> None:
    block = layout_block()
    names = named_files(block)
    missing = sorted(
        str(p.relative_to(REPO))
        for p in (REPO / "lakehouse_assets" / "lib").rglob("*.py")
        if p.name != "__init__.py" and p.name not in names
    )
    assert not missing, f"modules missing from the map in docs/architecture.md: {missing}"


def test_every_file_on_the_map_exists() -> None:
    existing = {p.name for p in REPO.rglob("*.py") if ".venv" not in p.parts and ".cache" not in p.parts}
    stale = sorted(n for n in named_files(layout_block()) if n not in existing)
    assert not stale, f"docs/architecture.md's map names files that do not exist: {stale}"
