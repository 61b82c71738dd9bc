"""Memories around a turn: recalled into ``UserPromptSubmit``, credited at ``Stop``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from lossless.hooks.events import HookOutcome
from lossless.hooks.ingest import path_field

if TYPE_CHECKING:
    from lossless.engine.engine import Engine

RECALLED_KEY = "lcm_recalled_memory_ids"


def recall_memories(engine: Engine, payload: dict[str, Any], outcome: HookOutcome) -> None:
    """Add the few memories most relevant to the prompt as ``additionalContext``."""
    from lossless.engine.recall import recall_for_prompt, render_additional_context

    config = engine.config
    prompt = payload.get("prompt")
    if not config.recall_enabled or not isinstance(prompt, str) or not prompt.strip():
        return
    conversation = (
        engine.store.conversations.get(outcome.conversation_ids[0])
        if outcome.conversation_ids
        else None
    )
    cwd = payload.get("cwd")
    project = conversation.project if conversation else cwd if isinstance(cwd, str) else None
    if not project:
        return
    recalled = recall_for_prompt(
        engine.store,
        prompt,
        project,
        config.recall_budget_bytes,
        limit=config.recall_limit,
    )
    if not recalled:
        return
    if conversation is not None:
        # Remembered so the Stop hook can tell which ones the reply relied on.
        engine.store.conversations.update_metadata(
            conversation.id, {RECALLED_KEY: [r.memory.id for r in recalled]}
        )
    outcome.notes.append(f"recalled {len(recalled)} memory(ies)")
    outcome.output = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": render_additional_context(recalled),
            }
        },
        ensure_ascii=False,
    )


def record_memory_use(engine: Engine, payload: dict[str, Any], outcome: HookOutcome) -> None:
    """Memories the last reply cited count as used (they will rank higher)."""
    for conversation_id in outcome.conversation_ids[:1]:
        conversation = engine.store.conversations.get(conversation_id)
        surfaced = conversation.metadata.get(RECALLED_KEY) if conversation else None
        if not surfaced:
            continue
        # Only now: most Stop hooks follow a prompt that surfaced no memory.
        from lossless.engine.recall import feedback_from_response

        recent = engine.store.messages.list(
            conversation_id, after_seq=max(-1, engine.store.messages.count(conversation_id) - 20)
        )
        replies = [m.content for m in recent if m.role == "assistant"]
        replies.extend(_unstored_replies(engine, payload))
        used = feedback_from_response(engine.store, "\n".join(replies[-3:]), list(surfaced))
        if used:
            outcome.notes.append(f"{len(used)} recalled memory(ies) used")
        engine.store.conversations.update_metadata(conversation_id, {RECALLED_KEY: []})


def _unstored_replies(engine: Engine, payload: dict[str, Any]) -> list[str]:
    """Assistant text past the transcript's cursor: the reply a Stop hook just saw.

    Ingest holds the last assistant message back until the transcript moves
    on (it may still grow), so it is read here without being stored.
    """
    from lossless.hooks.confine import confine_transcript
    from lossless.models import NewMessage
    from lossless.sources import detect_kind, parser_for

    path = path_field(payload, "transcript_path")
    if path is None or not path.is_file():
        return []
    path = confine_transcript(path, engine.config, "transcript_path")
    kind = detect_kind(path)
    if kind is None:
        return []
    cursor = engine.store.cursors.get(str(path.resolve()))
    events, _ = parser_for(kind).parse(
        path,
        start_offset=cursor.byte_offset if cursor else 0,
        start_line=cursor.line_no if cursor else 0,
        final=True,
    )
    return [e.content for e in events if isinstance(e, NewMessage) and e.role == "assistant"]
