"""The delegation guard refuses delegations that keep no work, and bounds the depth."""

from __future__ import annotations

import pytest

from lossless.engine.operators.scope_guard import Delegation, check_delegation

SCOPE = "summarize the test failures in module auth"


@pytest.mark.parametrize(
    "kept",
    ["", "   ", "nothing", "None.", "n/a", "wait for the result", "just wait", "I will relay it",
     "aggregate results", "merge them", "collect the answers", "-", "TBD", "ok",
     "summarize test failures"],
)  # fmt: skip
def test_trivial_or_empty_kept_work_is_refused(kept: str) -> None:
    verdict = check_delegation(Delegation(SCOPE, kept), depth=0)
    assert not verdict.allowed
    assert "refused" in verdict.reason


def test_kept_work_that_repeats_the_scope_is_refused() -> None:
    verdict = check_delegation(Delegation(SCOPE, "summarize the failures in module auth"), depth=0)
    assert not verdict.allowed and "repeats" in verdict.reason


def test_real_kept_work_is_accepted_below_the_depth_limit() -> None:
    request = Delegation(SCOPE, "fix the login bug in auth/session.py and rerun the suite")
    assert check_delegation(request, depth=0).allowed
    assert check_delegation(request, depth=1, max_depth=2).allowed
    deep = check_delegation(request, depth=2, max_depth=2)
    assert not deep.allowed and "deep" in deep.reason


def test_an_empty_scope_is_refused() -> None:
    assert not check_delegation(Delegation("", "write the final report myself"), depth=0).allowed
