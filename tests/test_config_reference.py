"""docs/configuration.md is generated from SETTINGS and must match them."""

from __future__ import annotations

from pathlib import Path

from lossless.config import SETTINGS
from lossless.config_reference import render

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_configuration_reference_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: run "
        "`python -m lossless.config_reference > docs/configuration.md`"
    )


def test_every_setting_is_documented_with_its_env_var() -> None:
    text = render()
    for setting in SETTINGS:
        assert f"| `{setting.name}` |" in text and f"`{setting.env}`" in text
