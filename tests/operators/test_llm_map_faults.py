"""A slow, empty-handed or misconfigured model, per item: each ends with a clear status."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.operators.model_server import Reply, Request, serving

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.engine.operators.answers import SchemaCheck
from lossless.engine.operators.llm_map import JobAborted, answer_item
from lossless.engine.operators.spec import MapSpec
from lossless.summarize.factory import build_summarizer


def _model(url: str, timeout_s: float = 5.0) -> Any:
    return build_summarizer("openai", model="m", base_url=url, timeout_s=timeout_s, retries=0)


def test_a_timeout_is_retried_and_then_fails_with_its_reason() -> None:
    with serving(lambda r: Reply('{"ok": true}', delay_s=1.5)) as server:
        spec = MapSpec(kind="llm_map", prompt="p", max_retries=1, item_timeout_s=0.3)
        answer = answer_item(
            _model(server.openai_url, 0.3), spec, SchemaCheck(None), '{"n": 1}',
            stop=threading.Event(),
        )  # fmt: skip
    assert not answer.ok and answer.attempts == 2 and answer.calls == 2
    assert "unavailable" in (answer.error or "")


def test_an_empty_answer_counts_as_a_refusal_and_is_retried() -> None:
    replies = iter([Reply(""), Reply('{"label": "x"}')])
    with serving(lambda r: next(replies)) as server:
        spec = MapSpec(kind="llm_map", prompt="p", max_retries=2)
        check = SchemaCheck.compile({"type": "object", "required": ["label"]})
        answer = answer_item(_model(server.openai_url), spec, check, "{}", stop=threading.Event())
    assert answer.ok and answer.value == {"label": "x"} and answer.attempts == 2


def test_bad_credentials_stop_the_job_and_lose_nothing(lcm_home: Path) -> None:
    def respond(request: Request) -> Reply:
        return Reply(status=401)

    from lossless.engine.operators import jobs

    with Engine.open(config=load_config(lcm_home)) as engine, serving(respond) as server:
        spec = MapSpec(kind="llm_map", prompt="p", provider="openai", base_url=server.openai_url,
                       model="m", concurrency=2)  # fmt: skip
        job = jobs.start(engine, spec, project="p", items=[{"n": n} for n in range(5)])
        with pytest.raises(JobAborted):
            jobs.run(engine, job.id)
        counts = engine.store.map_jobs.counts(job.id)
        # Nothing was recorded as failed: every item waits for a resume.
        assert counts.pending == 5 and counts.failed == 0 and counts.running == 0
        assert json.loads(json.dumps(jobs.report(engine, job.id).as_dict()))["status"] == "running"
