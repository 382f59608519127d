"""Importing is free of side effects: the framework loads none of the demo and no Dagster code
location, and importing the package builds nothing. Each import runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lakehouse_assets_tests.framework.test_architecture import REPO

pytestmark = pytest.mark.unit

LOADED = (
    "import sys, json; {imports}; print(json.dumps(sorted(m for m in sys.modules if m.startswith('lakehouse_assets'))))"
)


def loaded_after(imports: str) -> list[str]:
    code = LOADED.format(imports=imports)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "imports",
    [
        "import lakehouse_assets.lib",
        "from lakehouse_assets.lib import dp",
        "import lakehouse_assets.lib.engine.writing.batch",
    ],
)
def test_the_framework_imports_nothing_of_the_demo(imports: str) -> None:
    demo = [m for m in loaded_after(imports) if not m.startswith("lakehouse_assets.lib") and m != "lakehouse_assets"]
    assert demo == [], f"{imports} loaded {demo}"


def test_importing_the_package_builds_no_definitions() -> None:
    assert loaded_after("import lakehouse_assets") == ["lakehouse_assets"]


def test_the_code_location_is_built_when_dagster_loads_it() -> None:
    loaded = loaded_after(
        "import lakehouse_assets.definitions as d; import dagster as dg; assert isinstance(d.defs(), dg.Definitions)"
    )
    assert "lakehouse_assets.definitions" in loaded and "lakehouse_assets.lib.orchestrate.code_location" in loaded
