"""Fixtures for summarizer tests."""

from __future__ import annotations

import pytest
from tests.summarize.material import build_condensation_input, build_transcript


@pytest.fixture
def transcript() -> str:
    return build_transcript()


@pytest.fixture
def condensation_input() -> str:
    return build_condensation_input()
