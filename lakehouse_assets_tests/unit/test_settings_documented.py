"""Every setting is documented where users look: each variable of lib/settings.py is named in a
table of docs/configuration.md, and each field's docstring names its variable."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from lakehouse_assets.lib.settings import ENV_NAMES, Settings

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def test_every_variable_is_in_the_configuration_page() -> None:
    text = (REPO / "docs" / "configuration.md").read_text()
    first_cells = re.findall(r"^\| ([^|]+) \|", text, re.MULTILINE)
    documented = {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}
    assert sorted(set(ENV_NAMES.values()) - documented) == []


def test_each_field_says_its_variable_and_has_one() -> None:
    tree = ast.parse((REPO / "lakehouse_assets" / "lib" / "settings.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    docs, field = {}, None
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            field = node.target.id
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and field:
            docs[field] = str(node.value.value)
    assert set(ENV_NAMES) == set(Settings.__dataclass_fields__)
    for name, variable in ENV_NAMES.items():
        assert docs.get(name, "").startswith(f"``{variable}``"), name


def test_a_value_that_does_not_parse_is_one_sentence_under_the_root_error() -> None:
    from lakehouse_assets.lib.errors import ConfigurationError, LakehouseError
    from lakehouse_assets.lib.settings import current

    with pytest.raises(LakehouseError, match=r"LAKEHOUSE_TRANSIENT_TRIES='many' is not a valid int") as raised:
        current({"LAKEHOUSE_TRANSIENT_TRIES": "many"})
    assert isinstance(raised.value, ConfigurationError)
    with pytest.raises(ConfigurationError, match="LAKEHOUSE_LANDING_LINKS='all' is not 'refuse' or 'inside'"):
        current({"LAKEHOUSE_LANDING_LINKS": "all"})
