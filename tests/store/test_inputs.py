"""The store's input checks name the field that holds what no backend stores.

``inputs.new_messages`` checks a message's texts joined in one pass and only
looks field by field when that pass finds something: whichever field holds
the NUL or the lone surrogate, the error must still name it.
"""

from __future__ import annotations

import dataclasses

import pytest

from lossless.errors import InputError
from lossless.models import NewMessage, NewNativeRecord, NewPart
from lossless.store import inputs

GOOD = NewMessage(
    "assistant",
    "fine text, ünïcode too",
    parts=(NewPart("tool_use", '{"a": 1}', tool_name="bash", tool_call_id="call_1"),),
    ingest_key="k1",
    created_at="2026-01-01T00:00:00Z",
    native_records=(NewNativeRecord("k1", "message", '{"role": "assistant"}', "/t.jsonl"),),
)


def _with(field: str, value: str) -> NewMessage:
    part, record = GOOD.parts[0], GOOD.native_records[0]
    if field in ("content", "ingest_key", "created_at"):
        return dataclasses.replace(GOOD, **{field: value})
    if field.startswith("part."):
        return dataclasses.replace(GOOD, parts=(dataclasses.replace(part, **{field[5:]: value}),))
    return dataclasses.replace(
        GOOD, native_records=(dataclasses.replace(record, **{field[7:]: value}),)
    )


FIELDS = {
    "content": "message content",
    "ingest_key": "ingest key",
    "created_at": "created_at",
    "part.kind": "message part kind",
    "part.text": "message part text",
    "part.tool_name": "tool name",
    "part.tool_call_id": "tool call id",
    "record.raw": "native record",
    "record.native_key": "native key",
    "record.record_type": "native record type",
    "record.source_path": "source path",
}


def test_storable_messages_pass() -> None:
    inputs.new_messages([GOOD, dataclasses.replace(GOOD, content="漢字 \U0001f600")])


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize(("bad", "why"), [("a\x00b", "NUL"), ("a\ud800b", "surrogate")])
def test_the_field_holding_it_is_named(field: str, bad: str, why: str) -> None:
    with pytest.raises(InputError, match=f"^{FIELDS[field]} contains .*{why}"):
        inputs.new_messages([GOOD, _with(field, bad)])


def test_a_surrogate_pair_split_over_two_fields_is_refused() -> None:
    """Joined, a high and a low surrogate from two fields sit side by side:
    still two lone surrogates, never one character."""
    split = dataclasses.replace(GOOD, content="end \ud83d", ingest_key="\ude00 start")
    with pytest.raises(InputError, match=r"^message content contains a lone"):
        inputs.new_messages([split])
