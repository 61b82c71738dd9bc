"""The map tools through the real MCP client: start a job, poll it, page its results."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
from tests.operators.model_server import Reply, Request, serving
from tests.operators.test_llm_map_cli import parity_answer
from tests.test_mcp_server import is_error, stdio_session, structured, text_of


def test_llm_map_starts_at_once_and_lcm_job_pages_the_results(tmp_path: Path) -> None:
    home = tmp_path / "home"

    def respond(request: Request) -> Reply:
        return Reply(parity_answer(request.item or "{}"), delay_s=0.05)

    with serving(respond) as server:
        env = {
            "LCM_SUMMARIZER_PROVIDER": "openai",
            "LCM_SUMMARIZER_BASE_URL": server.openai_url,
            "LCM_SUMMARIZER_MODEL": "m",
        }

        async def main() -> None:
            async with stdio_session(home, tmp_path, env) as session:
                started_at = time.monotonic()
                started = await session.call_tool(
                    "lcm_llm_map",
                    {"prompt": "parity", "items": [{"n": n} for n in range(12)],
                     "concurrency": 4},
                )  # fmt: skip
                assert not is_error(started), text_of(started)
                job = structured(started)
                assert job["job"].startswith("job_") and job["items"] == 12
                assert time.monotonic() - started_at < 10  # it did not wait for the work
                deadline = time.monotonic() + 90
                while True:
                    page = structured(await session.call_tool("lcm_job", {"job": job["job"]}))
                    if page["status"] == "done" or time.monotonic() > deadline:
                        break
                    await anyio.sleep(0.3)
                assert page["status"] == "done" and page["items"]["ok"] == 12
                first = structured(
                    await session.call_tool("lcm_job", {"job": job["job"], "limit": 5})
                )
                assert [r["index"] for r in first["results"]] == [0, 1, 2, 3, 4]
                assert first["next_after"] == 4
                rest = structured(
                    await session.call_tool(
                        "lcm_job", {"job": job["job"], "after": 4, "limit": 500}
                    )
                )
                assert [r["index"] for r in rest["results"]] == list(range(5, 12))
                assert rest["results"][0]["result"] == json.loads(parity_answer('{"n": 5}'))
                missing = await session.call_tool("lcm_job", {"job": "job_nope"})
                assert is_error(missing) and "no map job" in text_of(missing)

        anyio.run(main)


def test_a_sub_agent_must_keep_work_to_start_a_map(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_session(home, tmp_path, {"LCM_IN_SUMMARIZER": "1"}) as session:
            refused = await session.call_tool(
                "lcm_llm_map",
                {"prompt": "p", "items": [1], "delegated_scope": "all of it",
                 "kept_work": "wait for the results"},
            )  # fmt: skip
            assert is_error(refused) and "delegation refused" in text_of(refused)

    anyio.run(main)
