"""Fixtures of the torture suite: ``backend`` runs a test on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from tests.pg_fixtures import own_pg_server, pg_home  # noqa: F401


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The backend of this run; on PostgreSQL, LCM_* point every ``lcm`` at a fresh database."""
    if request.param == "postgresql":
        request.getfixturevalue("pg_home")
    return str(request.param)
