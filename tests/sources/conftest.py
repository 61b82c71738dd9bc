"""Fixtures for the parser tests: where the real transcripts are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The test modules share sources_helpers.py; put this folder on sys.path so it
# imports by name under any --import-mode.
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA_DIR.is_dir():
        pytest.skip(f"../shared/data not found: {DATA_DIR} (real transcripts are not in the repo)")
    return DATA_DIR


@pytest.fixture(scope="session")
def claude_dir(data_dir: Path) -> Path:
    return data_dir / "claude-code" / "spotter"


@pytest.fixture(scope="session")
def codex_dir(data_dir: Path) -> Path:
    return data_dir / "codex" / "codemie-code"
