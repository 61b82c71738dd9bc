"""What a model's answer to one item is: JSON, checked against the job's schema.

Models wrap JSON in prose or code fences more often than they should; the
first JSON value in the answer counts, so ``Sure! {"a": 1}`` is ``{"a": 1}``.
Anything else is an ``InvalidAnswer`` whose message is fed back to the model
on the retry, so it can correct itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from lossless.errors import InputError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)\n?```", re.DOTALL)
# Deeper than any real answer. An answer is refused past it before anything
# recurses into it (the schema validator walks a value in Python, recursively).
_MAX_NESTING = 200
_MAX_ANSWER_CHARS = 2_000_000


class InvalidAnswer(Exception):
    """The answer is not usable; ``str(exc)`` says why, for the model to read."""


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """A compiled JSON Schema (None: any JSON value is accepted)."""

    schema: dict[str, Any] | None
    _validator: Any = None

    @classmethod
    def compile(cls, schema: object) -> SchemaCheck:
        """Check ``schema`` itself before any model is called; ``InputError`` if it is not one."""
        if schema is None:
            return cls(None)
        if not isinstance(schema, dict):
            raise InputError(
                f"the schema must be a JSON object (a JSON Schema), not {type(schema).__name__}"
            )
        import jsonschema

        validator_class = jsonschema.validators.validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.path) or "(top level)"
            raise InputError(f"not a valid JSON Schema at {where}: {exc.message}") from None
        return cls(schema, validator_class(schema))

    def errors(self, value: object) -> list[str]:
        if self._validator is None:
            return []
        found = sorted(self._validator.iter_errors(value), key=lambda e: list(e.path))
        return [f"{'/'.join(str(p) for p in e.path) or '(top level)'}: {e.message}" for e in found]


def _nesting(text: str) -> int:
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def loads_bounded(text: str) -> Any:
    """``json.loads`` that raises only ``ValueError`` for hostile input (depth, huge ints)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _candidates(text: str) -> list[str]:
    stripped = text.strip()
    found = [stripped]
    found += [m.group(1).strip() for m in _FENCE.finditer(text)]
    for opener in ("{", "["):
        start = stripped.find(opener)
        if start > 0:
            found.append(stripped[start:])
    return found


def parse_answer(text: str) -> Any:
    """The JSON value the answer holds; ``InvalidAnswer`` if there is none."""
    if not text.strip():
        raise InvalidAnswer("the answer was empty; answer with a JSON value")
    if len(text) > _MAX_ANSWER_CHARS:
        raise InvalidAnswer(f"the answer is longer than {_MAX_ANSWER_CHARS} characters")
    decoder = json.JSONDecoder()
    last_error = "no JSON value found"
    for candidate in _candidates(text):
        if _nesting(candidate) > _MAX_NESTING:
            raise InvalidAnswer(f"the JSON is nested deeper than {_MAX_NESTING} levels")
        try:
            value, _end = decoder.raw_decode(candidate)
        except RecursionError:
            raise InvalidAnswer("the JSON is nested too deeply") from None
        except ValueError as exc:
            last_error = str(exc)
            continue
        return value
    raise InvalidAnswer(f"the answer is not JSON ({last_error}); answer with only a JSON value")


def checked_answer(text: str, check: SchemaCheck) -> Any:
    """The answer's JSON value if it satisfies the schema; ``InvalidAnswer`` otherwise."""
    value = parse_answer(text)
    problems = check.errors(value)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InvalidAnswer(f"the JSON does not match the schema: {shown}{more}")
    return value
