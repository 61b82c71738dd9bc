"""docs/cli.md is generated from the commands and must match them."""

from __future__ import annotations

from pathlib import Path

from lossless.cli.reference import render_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_up_to_date() -> None:
    assert DOC.read_text("utf-8") == render_reference(), (
        "docs/cli.md is stale: run `python -m lossless.cli.reference > docs/cli.md`"
    )
