"""A minimal agent loop on lossless: ingest, assemble under a budget, compact after each turn.

Runs offline by default with a stand-in "model" that calls a fake tool now and
then, so you can watch the context stay bounded while every message is kept::

    python examples/agent_loop.py --turns 60 --budget 4000

With ``--anthropic`` (needs ``pip install 'lossless-context[anthropic]'`` and
``ANTHROPIC_API_KEY``) each turn's context goes to a real model instead.

It writes to a new temporary folder unless you pass ``--home``, so it never
touches your real history in ``~/.lcm``; the folder is printed at the end for
``lcm --home FOLDER dag agent-loop-demo``.

What to look for: ``stored`` grows every turn, ``context`` does not; the
summaries in the DAG point back to every message (``lcm dag`` / ``lcm expand``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from typing import Any

from lossless import Engine

QUESTIONS = [
    "Why does the migration in db/0007_add_index.sql fail on the staging database?",
    "Add a retry with backoff to worker.fetch() for HTTP 429 responses.",
    "What did we decide about the cache TTL for /api/users?",
    "Run the test suite and fix whatever fails in tests/test_parser.py.",
    "Rename the config key timeout_ms to timeout_s everywhere.",
]


def fake_model(request: dict[str, Any], turn: int, rng: random.Random) -> list[dict[str, Any]]:
    """Stand-in for a model call: sometimes uses a tool, then answers.

    Returns the new messages of this turn in OpenAI chat shape.
    """
    seen = len(request["messages"])
    if rng.random() < 0.6:
        call_id = f"call_{turn:04d}"
        command = f"pytest tests/test_{turn % 7}.py -q"
        return [
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": f"{rng.randint(1, 40)} passed, {rng.randint(0, 2)} failed in 0.{turn}s\n"
                + "collected items ... " * 20,
            },
            {
                "role": "assistant",
                "content": f"Turn {turn}: I ran `{command}` and looked at {seen} messages of "
                f"context. The fix is in src/module_{turn % 5}.py. " + "Details follow. " * 30,
            },
        ]
    return [
        {
            "role": "assistant",
            "content": f"Turn {turn}: answered from {seen} messages of context. "
            + "Explanation. " * 40,
        }
    ]


def anthropic_model(request: dict[str, Any]) -> list[dict[str, Any]]:
    import anthropic

    client = anthropic.Anthropic()
    response = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, **request)
    text = "".join(block.text for block in response.content if block.type == "text")
    return [{"role": "assistant", "content": text}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--budget", type=int, default=4_000, help="context budget in tokens")
    parser.add_argument(
        "--home", default=None, help="data folder (default: a new temporary folder)"
    )
    parser.add_argument("--session", default="agent-loop-demo")
    parser.add_argument("--anthropic", action="store_true", help="call a real model")
    args = parser.parse_args()
    rng = random.Random(7)
    if args.anthropic:
        problem = anthropic_problem()
        if problem:
            sys.exit(f"agent_loop.py: --anthropic: {problem}")
    home = args.home or tempfile.mkdtemp(prefix="lcm-agent-loop-")

    # Small settings so compaction is visible within a few dozen turns.
    with Engine.open(
        home,
        fresh_tail_count=8,
        leaf_chunk_tokens=1_500,
        leaf_target_tokens=200,
        condensed_target_tokens=300,
        leaf_min_fanout=4,
        condensed_min_fanout=3,
    ) as engine:
        chat = engine.conversation(args.session, project="examples")
        for turn in range(args.turns):
            chat.ingest([{"role": "user", "content": QUESTIONS[turn % len(QUESTIONS)]}])
            context = chat.assemble(
                args.budget,
                format="anthropic" if args.anthropic else "openai",
                system="You are a coding agent.",
            )
            if args.anthropic:
                new_messages = anthropic_model(context.request())
            else:
                new_messages = fake_model(context.request(), turn, rng)
            # Store the model's output, then compact (best-effort, never raises
            # for a flaky summarizer; a bad API key does raise).
            result = chat.after_turn(new_messages, budget=args.budget)
            b = context.breakdown
            stored = engine.store.messages.count(chat.id)
            print(
                f"turn {turn:3d}: stored {stored:4d} messages | context {b.total:5,} tokens "
                f"({b.summary_count} summaries + {b.message_count} messages) | "
                f"{result.describe()}"
            )
        view = chat.dag()
        depth = f", DAG depth {view.max_depth}" if view.summary_count else ""
        print(
            f"\n{view.message_count} messages stored, {view.summary_count} summaries{depth}; "
            f"context now {view.context_tokens:,} tokens."
        )
    print(f"stored in {home} (look: lcm --home {home} dag {args.session})")


def anthropic_problem() -> str | None:
    """Why a real model cannot be called, before the first turn (not an SDK traceback)."""
    try:
        import anthropic  # noqa: F401
    except ImportError:
        return "the anthropic SDK is missing: pip install 'lossless-context[anthropic]'"
    if not os.environ.get("ANTHROPIC_API_KEY"):
        return "set ANTHROPIC_API_KEY to your Anthropic API key (or run without --anthropic)"
    return None


if __name__ == "__main__":
    main()
