"""Content blocks and message text: the one mapping every format shares.

``block_to_part`` turns one Anthropic / OpenAI / Codex content block into a
``NewPart`` (keeping what it does not map, so the block can be rebuilt);
``render_content`` is the single rule that turns parts into a message's
plain text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from lossless.models import NewPart


def _extras(block: dict[str, Any], canonical_type: str, *consumed: str) -> dict[str, Any] | None:
    """The keys of ``block`` not mapped onto NewPart fields, so it can be rebuilt.

    ``type`` is kept only when it differs from the part kind's canonical block
    type (thinking vs redacted_thinking, input_text vs text...).
    """
    skip = set(consumed)
    if block.get("type") == canonical_type:
        skip.add("type")
    extras = {k: v for k, v in block.items() if k not in skip}
    return extras or None


def _media_type_of_url(url: object) -> str | None:
    if isinstance(url, str) and url.startswith("data:"):
        head = url[5:].split(",", 1)[0]
        media = head.split(";", 1)[0]
        return media or None
    return None


def flatten_tool_result(content: object) -> tuple[str, dict[str, Any]]:
    """Flatten a tool result's content to text, plus metadata to rebuild its shape.

    A list of plain text blocks is joined with newlines and rebuilt from the
    lengths; any other list (images...) is kept as-is in metadata, base64 and all,
    while the text only says ``[image]``.
    """
    if isinstance(content, str):
        return content, {}
    if isinstance(content, list):
        texts: list[str] = []
        plain = True
        for item in content:
            if isinstance(item, str):
                texts.append(item)
                plain = False
            elif isinstance(item, dict):
                itype = item.get("type")
                if itype in ("text", "input_text", "output_text") and isinstance(
                    item.get("text"), str
                ):
                    texts.append(item["text"])
                    plain = plain and itype == "text" and set(item) == {"type", "text"}
                elif itype in ("image", "input_image", "image_url"):
                    texts.append("[image]")
                    plain = False
                else:
                    texts.append(f"[{itype}]" if isinstance(itype, str) else "[block]")
                    plain = False
            else:
                texts.append(json.dumps(item, ensure_ascii=False))
                plain = False
        if plain:
            return "\n".join(texts), {"text_block_lengths": [len(t) for t in texts]}
        return "\n".join(texts), {"content": content}
    if content is None:
        return "", {"content": None}
    return json.dumps(content, ensure_ascii=False), {"content": content}


def block_to_part(block: object) -> NewPart:
    """Convert one content block (Anthropic, OpenAI chat or Responses/Codex) to a part.

    Never raises: a block of unknown or malformed shape becomes an ``other`` part
    holding the original block.
    """
    if isinstance(block, str):
        return NewPart("text", text=block, metadata={"bare_string": True})
    if not isinstance(block, dict):
        return NewPart("other", metadata={"block": block})
    btype = block.get("type")
    if btype in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
        return NewPart("text", text=block["text"], metadata=_extras(block, "text", "text"))
    if btype == "refusal" and isinstance(block.get("refusal"), str):
        return NewPart("text", text=block["refusal"], metadata=_extras(block, "text", "refusal"))
    if btype == "thinking" and isinstance(block.get("thinking"), str):
        return NewPart(
            "reasoning", text=block["thinking"], metadata=_extras(block, "thinking", "thinking")
        )
    if btype == "redacted_thinking":
        return NewPart("reasoning", text="", metadata=_extras(block, "thinking"))
    if btype == "tool_use" and isinstance(block.get("name"), str):
        tool_id = block.get("id")
        text = json.dumps(block["input"], ensure_ascii=False) if "input" in block else None
        consumed = ["name", "input"] + (["id"] if isinstance(tool_id, str) else [])
        return NewPart(
            "tool_use",
            text=text,
            tool_name=block["name"],
            tool_call_id=tool_id if isinstance(tool_id, str) else None,
            metadata=_extras(block, "tool_use", *consumed),
        )
    if btype == "tool_result":
        use_id = block.get("tool_use_id")
        consumed = ["content"] + (["tool_use_id"] if isinstance(use_id, str) else [])
        meta = _extras(block, "tool_result", *consumed) or {}
        if "content" in block:
            text, shape = flatten_tool_result(block["content"])
            meta.update(shape)
        else:
            text = ""
            meta["content_missing"] = True
        return NewPart(
            "tool_result",
            text=text,
            tool_call_id=use_id if isinstance(use_id, str) else None,
            metadata=meta or None,
        )
    if btype in ("image", "image_url", "input_image"):
        meta = _extras(block, "image") or {}
        source = block.get("source")
        media: object = None
        if isinstance(source, dict):
            media = source.get("media_type") or _media_type_of_url(source.get("url"))
        url = block.get("image_url")
        if isinstance(url, dict):
            url = url.get("url")
        media = media or _media_type_of_url(url)
        if isinstance(media, str):
            meta["media_type"] = media
        return NewPart("image", metadata=meta or None)
    if btype in ("document", "file", "input_file"):
        meta = _extras(block, "document") or {}
        source = block.get("source")
        text = None
        if isinstance(source, dict):
            if source.get("type") == "text" and isinstance(source.get("data"), str):
                text = source["data"]
            if isinstance(source.get("media_type"), str):
                meta["media_type"] = source["media_type"]
        return NewPart("file", text=text, metadata=meta or None)
    text = block.get("text")
    return NewPart("other", text=text if isinstance(text, str) else None, metadata={"block": block})


def render_part(part: NewPart) -> str | None:
    """One part's contribution to ``content``; None when it contributes nothing."""
    meta = part.metadata or {}
    text = part.text or ""
    if part.kind == "text":
        return text
    if part.kind == "reasoning":
        return text or None
    if part.kind == "tool_use":
        head = f"[tool_use {part.tool_name or 'unknown'}]"
        return f"{head} {text}" if text else head
    if part.kind == "tool_result":
        return f"[tool_result] {text}" if text else "[tool_result]"
    if part.kind == "image":
        media = meta.get("media_type")
        return f"[image {media}]" if isinstance(media, str) else "[image]"
    if part.kind == "file":
        label = next(
            (meta[k] for k in ("title", "filename", "media_type") if isinstance(meta.get(k), str)),
            None,
        )
        head = f"[file {label}]" if label else "[file]"
        return f"{head} {text}" if text else head
    block = meta.get("block")
    btype = block.get("type") if isinstance(block, dict) else None
    head = f"[{btype}]" if isinstance(btype, str) else "[other]"
    return f"{head} {text}" if text else head


def render_content(parts: Iterable[NewPart]) -> str:
    """The plain-text ``content`` of a message built from structured parts.

    (A message that is a plain string in its source keeps that string instead;
    the parsers apply that rule before calling this.)
    """
    return "\n\n".join(r for r in map(render_part, parts) if r is not None)
