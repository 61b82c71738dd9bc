"""agentic-map: a sub-agent uses lossless's tools, and the scope guard talks back."""

from __future__ import annotations

import json
from pathlib import Path

from tests.operators.model_server import Reply, Request, serving

from lossless.config import load_config
from lossless.engine.engine import Engine

PLANTED = "the deploy key rotates on the 3rd Tuesday"


def test_a_sub_agent_greps_history_then_answers(lcm_home: Path, tmp_path: Path) -> None:
    def respond(request: Request) -> Reply:
        prompt = request.prompt
        if "Result of step 1" not in prompt:
            return Reply(json.dumps({"tool": "grep", "arguments": {"pattern": "deploy key"}}))
        if "Result of step 2" not in prompt:
            # Delegating everything and keeping nothing: the guard must refuse.
            return Reply(json.dumps({"tool": "delegate", "arguments": {
                "task": "answer it", "delegated_scope": "answer the question",
                "kept_work": "nothing"}}))  # fmt: skip
        if "Result of step 3" not in prompt:
            return Reply(json.dumps({"tool": "read_file", "arguments": {"path": "../outside"}}))
        found = "rotates on the 3rd Tuesday" in prompt
        return Reply(json.dumps({"final": {"found": found}}))

    (tmp_path / "notes").mkdir()
    with Engine.open(config=load_config(lcm_home)) as engine:
        chat = engine.conversation("s1", project="p")
        chat.ingest([{"role": "user", "content": f"remember: {PLANTED}"}])
        schema = {"type": "object", "required": ["found"]}
        with serving(respond) as server:
            report = engine.map(
                [{"question": "when does the deploy key rotate?"}],
                "Answer from history.",
                schema=schema,
                kind="agentic_map",
                provider="openai",
                base_url=server.openai_url,
                model="m",
            )
            prompts = [r.prompt for r in server.requests]
        results = list(engine.map_results(report.job.id))
    assert results[0]["status"] == "ok" and results[0]["result"] == {"found": True}, prompts[1]
    assert report.counts.calls == 4
    assert "delegation refused" in prompts[2]  # the model read the guard's reason
    # A file tool was not opted into: the call is answered with an error, not a read.
    assert "no tool 'read_file'" in prompts[3]


def test_the_file_tool_is_confined_to_its_folder(lcm_home: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README").write_text("magic number 4242")
    (tmp_path / "secret.txt").write_text("outside")

    def respond(request: Request) -> Reply:
        prompt = request.prompt
        if "Result of step 1" not in prompt:
            return Reply(json.dumps({"tool": "read_file", "arguments": {"path": "../secret.txt"}}))
        if "Result of step 2" not in prompt:
            return Reply(json.dumps({"tool": "read_file", "arguments": {"path": "README"}}))
        return Reply(json.dumps({"final": "4242" in prompt and "outside\n" not in prompt}))

    from lossless.engine.operators import jobs
    from lossless.engine.operators.spec import MapSpec

    with Engine.open(config=load_config(lcm_home)) as engine, serving(respond) as server:
        spec = MapSpec(
            kind="agentic_map", prompt="read it", provider="openai", base_url=server.openai_url,
            model="m", file_root=str(root), concurrency=1,
        )  # fmt: skip
        job = jobs.start(engine, spec, project="p", items=[{"x": 1}])
        report = jobs.run(engine, job.id)
        prompts = [r.prompt for r in server.requests]
        results = list(engine.map_results(report.job.id))
    assert "outside the file root" in prompts[1]
    assert results[0]["result"] is True


def test_a_sub_agent_that_never_answers_fails_at_its_step_limit(lcm_home: Path) -> None:
    def respond(request: Request) -> Reply:
        return Reply(json.dumps({"tool": "search", "arguments": {"query": "anything"}}))

    from lossless.engine.operators import jobs
    from lossless.engine.operators.spec import MapSpec

    with Engine.open(config=load_config(lcm_home)) as engine, serving(respond) as server:
        spec = MapSpec(
            kind="agentic_map", prompt="loop", provider="openai", base_url=server.openai_url,
            model="m", max_steps=3, concurrency=1,
        )  # fmt: skip
        job = jobs.start(engine, spec, project="p", items=[1])
        jobs.run(engine, job.id)
        results = list(jobs.iter_results(engine, job.id))
        assert len(server.requests) == 3
    assert results[0]["status"] == "failed" and "within 3 steps" in results[0]["error"]
