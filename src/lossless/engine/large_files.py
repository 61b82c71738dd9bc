"""Large file handling: keep huge pastes and tool outputs out of the active context.

A file block or tool output above ``large_file_threshold`` tokens would eat the
context window every turn it stays in the fresh tail, and a summary of it is
worth less than a map of it. At ingest, such content is written under
``config.files_dir`` (content-addressed, mode 0600 in 0700 folders), recorded
as a ``LargeFile`` with a type-aware *exploration summary*, and replaced in the
message by a compact reference::

    [file file_0123abcd4567ef89: app/models.py, 31,204 tokens — Python source,
    2,140 lines; signatures: class User (l.12), def save(self) (l.40), ...]

``lcm describe file_…`` (retrieval) returns the full content again through
``read_large_file``. The raw native record of the message still holds the
original line, so provenance is kept; the point is that the message text, its
search index and every context assembly stay small.
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import hashlib
import io
import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lossless.config import Config
from lossless.injection import WITHHELD_NOTE, scan
from lossless.models import LargeFile, NewLargeFile, NewMessage, NewPart
from lossless.sources import render_content
from lossless.store.contract import Repositories
from lossless.tokens import TokenEstimator, estimate_tokens

__all__ = [
    "Exploration",
    "explore",
    "externalize_large_content",
    "file_reference",
    "large_file_path",
    "read_large_file",
]

# ~200 tokens: enough for a structural map, small enough to sit in every context.
SUMMARY_MAX_CHARS = 800
_FILE_BLOCK_RE = re.compile(r"<file(?P<attrs>\s[^<>]*)?>(?P<body>.*?)</file>", re.DOTALL)
_ATTR_RE = re.compile(r'(\w[\w-]*)\s*=\s*(?:"([^"]*)"|\'([^\']*)\')')
# Claude Code's Read tool prefixes lines with `   12→`, `cat -n` with
# `    12<TAB>`; the numbers are noise for structure detection, so they are
# stripped for analysis.
_NUMBERED_LINE_RE = re.compile(r"^\s*(\d+)→|^\s+(\d+)\t")

_EXT_MEDIA = {
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".ndjson": "application/x-ndjson",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".log": "text/plain",
    ".html": "text/html",
    ".xml": "application/xml",
}
_CODE_EXT = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".lua": "lua",
    ".ex": "elixir",
    ".exs": "elixir",
}
_EXT_FOR_MEDIA = {
    "application/json": ".json",
    "application/x-ndjson": ".jsonl",
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "application/yaml": ".yaml",
    "text/markdown": ".md",
}

# One regex per family of languages; group "sig" is the signature line to show.
_SIGNATURE_RE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<sig>"
    r"(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function\*?|interface|enum|struct|trait|impl|"
    r"module|protocol|fn|func|type|object|record)\s+[\w$<>.,:\[\]() *&-]+"
    r"|(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+\w+"
    r"|(?:public|private|protected|internal|static|final|abstract|override|virtual)\s+[\w<>\[\], .]+\("
    r"|(?:export\s+)?(?:const|let)\s+\w+\s*=\s*(?:async\s*)?(?:\([^)]*\)|\w+)\s*=>"
    r"|CREATE\s+(?:TABLE|VIEW|INDEX|FUNCTION|TRIGGER)\b[^(;]*"
    r")",
    re.MULTILINE | re.IGNORECASE,
)
_YAML_KEY_RE = re.compile(r"^([A-Za-z_][\w.\-]*|\"[^\"]+\"|'[^']+'):(?:\s|$)")
_HEADING_RE = re.compile(r"^#{1,6}\s+\S")


@dataclass(frozen=True, slots=True)
class Exploration:
    """What a large text looks like: its media type and a short structural map."""

    media_type: str
    summary: str


# -------------------------------------------------------------------- exploring


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _strip_line_numbers(text: str) -> str:
    lines = text.splitlines()
    sample = [ln for ln in lines[:200] if ln.strip()]
    numbers = [int(m.group(1) or m.group(2)) for ln in sample if (m := _NUMBERED_LINE_RE.match(ln))]
    # Numbered output counts up one line at a time; a data column of numbers
    # (TSV ids) rarely does, and is left alone.
    counting = sum(1 for a, b in itertools.pairwise(numbers) if b == a + 1)
    if sample and len(numbers) >= 0.8 * len(sample) and counting >= 0.8 * (len(numbers) - 1):
        return "\n".join(_NUMBERED_LINE_RE.sub("", ln, count=1) for ln in lines)
    return text


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return f"object, {len(value)} keys"
    if isinstance(value, list):
        return f"array[{len(value)}]"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "string"


def _describe_keys(obj: dict[str, Any], limit: int = 14) -> str:
    shown = [f"{k} ({_json_type(v)})" for k, v in list(obj.items())[:limit]]
    more = f", +{len(obj) - limit} more" if len(obj) > limit else ""
    return ", ".join(shown) + more


def _describe_json(value: Any) -> str:
    if isinstance(value, dict):
        text = f"JSON object with {len(value)} keys: {_describe_keys(value)}"
        nested = [(k, v) for k, v in value.items() if isinstance(v, dict | list) and v][:3]
        for key, child in nested:
            if isinstance(child, dict):
                text += f"; {key}: {{{_describe_keys(child, 8)}}}"
            elif isinstance(child[0], dict):
                text += f"; {key}: {len(child)} items with keys {', '.join(list(child[0])[:8])}"
        return text
    if isinstance(value, list):
        text = f"JSON array of {len(value)} items"
        if value and isinstance(value[0], dict):
            keys: dict[str, None] = {}
            for item in value[:50]:
                if isinstance(item, dict):
                    keys.update(dict.fromkeys(item))
            text += f"; items are objects with keys: {', '.join(list(keys)[:16])}"
            text += f"; first item: {_clip(json.dumps(value[0], ensure_ascii=False), 200)}"
        elif value:
            text += f" of {_json_type(value[0]).split(',')[0]}"
        return text
    return f"JSON {_json_type(value)}: {_clip(json.dumps(value, ensure_ascii=False), 200)}"


def _try_jsonl(lines: list[str]) -> str | None:
    rows = [ln for ln in lines if ln.strip()]
    if len(rows) < 2:
        return None
    objects: list[Any] = []
    for line in rows[:20]:
        try:
            objects.append(json.loads(line))
        except ValueError:
            return None
    keys: dict[str, None] = {}
    for obj in objects:
        if isinstance(obj, dict):
            keys.update(dict.fromkeys(obj))
    text = f"JSON Lines, {len(rows)} records"
    if keys:
        text += f"; keys: {', '.join(list(keys)[:16])}"
    return text + f"; first record: {_clip(rows[0], 200)}"


def _try_csv(text: str, lines: list[str], ext: str) -> tuple[str, str] | None:
    sample_lines = [ln for ln in lines[:30] if ln.strip()]
    if len(sample_lines) < 3:
        return None
    delimiter: str | None = "\t" if ext == ".tsv" else "," if ext == ".csv" else None
    if delimiter is None:
        for candidate in (",", "\t", ";", "|"):
            counts = {ln.count(candidate) for ln in sample_lines}
            if len(counts) == 1 and counts.pop() >= 1:
                delimiter = candidate
                break
    if delimiter is None:
        return None
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next(reader)
        rows = sum(1 for _ in reader)
    except (csv.Error, StopIteration):
        return None
    media = "text/tab-separated-values" if delimiter == "\t" else "text/csv"
    name = {"\t": "TSV", ",": "CSV"}.get(delimiter, f"delimited ({delimiter!r})")
    cols = ", ".join(_clip(h, 40) for h in header[:20])
    more = f", +{len(header) - 20} more" if len(header) > 20 else ""
    first = f"; first row: {_clip(sample_lines[1], 160)}"
    return media, f"{name}, {rows} rows x {len(header)} columns: {cols}{more}{first}"


def _try_yaml(lines: list[str], ext: str) -> str | None:
    top = [m.group(1) for ln in lines if (m := _YAML_KEY_RE.match(ln))]
    content = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    looks_yaml = ext in (".yaml", ".yml") or (
        len(top) >= 3
        and content
        and (content[0].startswith("---") or _YAML_KEY_RE.match(content[0]) is not None)
        and all(not ln.rstrip().endswith((";", "{", "}")) for ln in content[:40])
    )
    if not looks_yaml:
        return None
    docs = sum(1 for ln in lines if ln.startswith("---")) or 1
    keys = list(dict.fromkeys(top))
    more = f", +{len(keys) - 20} more" if len(keys) > 20 else ""
    return f"YAML, {docs} document(s), {len(lines)} lines; top-level keys: {', '.join(keys[:20])}{more}"


def _python_signatures(text: str) -> list[str] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    top: list[str] = []
    nested: list[str] = []

    def visit(nodes: list[ast.stmt], prefix: str) -> None:
        out = nested if prefix else top
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                kw = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
                args = ", ".join(a.arg for a in node.args.args)
                out.append(f"{kw} {prefix}{node.name}({args}) (l.{node.lineno})")
            elif isinstance(node, ast.ClassDef):
                out.append(f"class {prefix}{node.name} (l.{node.lineno})")
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    # Top-level definitions first: when room runs out, methods are what goes.
    return top + nested


def _code_summary(text: str, lines: list[str], language: str | None) -> str | None:
    sigs = _python_signatures(text) if language in (None, "python") else None
    if sigs is not None and (language == "python" or len(sigs) >= 3):
        language = "python"
    else:
        sigs = []
        for match in _SIGNATURE_RE.finditer(text):
            line_no = text.count("\n", 0, match.start()) + 1
            sig = _clip(match.group("sig").rstrip("{:( "), 90)
            sigs.append(f"{sig} (l.{line_no})")
        if language is None and len(sigs) < 3:
            return None
    label = (language or "source").capitalize() + " source"
    shown: list[str] = []
    used = 0
    for sig in sigs:
        if used + len(sig) > SUMMARY_MAX_CHARS - 120:
            break
        shown.append(sig)
        used += len(sig) + 2
    more = f", +{len(sigs) - len(shown)} more" if len(sigs) > len(shown) else ""
    body = (
        f"; signatures: {', '.join(shown)}{more}" if shown else "; no top-level definitions found"
    )
    return f"{label}, {len(lines)} lines, {len(sigs)} definitions{body}"


def _prose_summary(lines: list[str]) -> str:
    nonblank = [ln.strip() for ln in lines if ln.strip()]
    words = sum(len(ln.split()) for ln in nonblank)
    headings = list(
        dict.fromkeys(ln.lstrip("# ").strip() for ln in nonblank if _HEADING_RE.match(ln))
    )
    text = f"Text, {len(lines)} lines, {words} words"
    if headings:
        text += f"; sections: {_clip(' | '.join(headings[:12]), 300)}"
    head = _clip(" ".join(nonblank[:4]), 220)
    tail = _clip(" ".join(nonblank[-3:]), 160) if len(nonblank) > 4 else ""
    text += f"; begins: {head}"
    if tail:
        text += f"; ends: {tail}"
    return text


def explore(text: str, name: str | None = None) -> Exploration:
    """Describe ``text`` by its structure: JSON/JSONL/CSV/YAML shape, code
    signatures, or the head, tail and headings of prose. Deterministic."""
    ext = Path(name).suffix.lower() if name else ""
    body = _strip_line_numbers(text)
    lines = body.splitlines()
    stripped = body.lstrip()
    summary: str | None = None
    media = _EXT_MEDIA.get(ext)
    if stripped[:1] in ("{", "[") or ext == ".json":
        try:
            summary = _describe_json(json.loads(body))
            media = "application/json"
        except ValueError:
            summary = None
    if summary is None and (ext in (".jsonl", ".ndjson") or stripped[:1] == "{"):
        summary = _try_jsonl(lines)
        if summary is not None:
            media = "application/x-ndjson"
    language = _CODE_EXT.get(ext)
    if summary is None and language is None:
        found = _try_csv(body, lines, ext)
        if found is not None:
            media, summary = found
    if summary is None and language is None:
        summary = _try_yaml(lines, ext)
        if summary is not None:
            media = "application/yaml"
    if summary is None and (language is not None or media is None):
        code = _code_summary(body, lines, language)
        if code is not None:
            summary = code
            media = f"text/x-{language or 'source'}"
            if language is None and code.startswith("Python"):
                media = "text/x-python"
    if summary is None:
        summary = _prose_summary(lines)
        media = media or "text/plain"
    return Exploration(media_type=media or "text/plain", summary=_clip(summary, SUMMARY_MAX_CHARS))


# -------------------------------------------------------------------- storing


def large_file_path(config: Config, sha256: str, media_type: str, name: str | None) -> Path:
    """Where content with this hash lives: ``files/<2 hex>/<sha256><ext>``.

    Content addressing makes re-imports and repeated pastes free, and a file
    name never depends on untrusted input (the original name is only recorded).
    """
    ext = Path(name).suffix.lower() if name else ""
    if not re.fullmatch(r"\.[a-z0-9]{1,10}", ext):
        ext = _EXT_FOR_MEDIA.get(media_type, ".txt")
    return config.files_dir / sha256[:2] / f"{sha256}{ext}"


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)


def _write_private(path: Path, data: bytes) -> None:
    _private_dir(path.parent)
    _private_dir(path.parent.parent)
    if path.exists() and path.stat().st_size == len(data):
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # Readers never see a half-written file: rename is atomic.
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_large_file(config: Config, large_file: LargeFile) -> str:
    """The full content of a stored large file (``lcm describe file_…``)."""
    path = Path(large_file.path)
    if not path.is_absolute():
        path = config.home / path
    return path.read_text(encoding="utf-8")


def inert_exploration(summary: str) -> str:
    """An exploration summary with every instruction-like part withheld.

    It quotes the file (its first and last lines, headings, a first record),
    and it sits in every context the reference is in: each ``; ``-separated
    part that addresses the agent keeps only its label ("begins: [...]").
    """
    if not scan(summary):
        return summary
    parts = []
    for part in summary.split("; "):
        if scan(part):
            label, colon, _ = part.partition(": ")
            part = f"{label}: {WITHHELD_NOTE}" if colon and len(label) <= 30 else WITHHELD_NOTE
        parts.append(part)
    kept = "; ".join(parts)
    return kept if not scan(kept) else WITHHELD_NOTE


def file_reference(large_file: LargeFile) -> str:
    name = large_file.original_name or "content"
    return (
        f"[file {large_file.id}: {name}, {large_file.token_count:,} tokens — "
        f"{large_file.exploration_summary}]"
    )


def _store(
    repos: Repositories,
    config: Config,
    conversation_id: int,
    text: str,
    name: str | None,
    tokens: int,
) -> LargeFile:
    data = text.encode("utf-8")
    sha = hashlib.sha256(data).hexdigest()
    exploration = explore(text, name)
    path = large_file_path(config, sha, exploration.media_type, name)
    _write_private(path, data)
    return repos.files.create(
        NewLargeFile(
            conversation_id=conversation_id,
            path=str(path),
            byte_size=len(data),
            token_count=tokens,
            sha256=sha,
            media_type=exploration.media_type,
            exploration_summary=inert_exploration(exploration.summary),
            original_name=name,
        )
    )


def _name_from_meta(meta: dict[str, Any] | None) -> str | None:
    if not meta:
        return None
    for key in ("filename", "file_path", "path", "title", "name"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def externalize_large_content(
    repos: Repositories,
    config: Config,
    conversation_id: int,
    message: NewMessage,
    *,
    estimator: TokenEstimator = estimate_tokens,
) -> NewMessage:
    """Return ``message`` with every oversized file block or tool output stored
    apart and replaced by a ``[file file_…: …]`` reference.

    Checked, in each part: ``tool_result`` and ``file`` parts as a whole,
    ``<file …>…</file>`` blocks inside text parts, and a whole user text part
    (a large paste). ``tool_use`` inputs are left alone: a tool call must stay
    replayable with its real arguments. The message content is re-rendered
    from the new parts, so content and parts never disagree. Messages with
    nothing above the threshold are returned unchanged (the same object).
    """
    threshold = config.large_file_threshold
    if threshold <= 0:
        return message
    replacements: list[tuple[str, str]] = []

    def externalize(text: str, name: str | None) -> tuple[str, LargeFile] | None:
        tokens = estimator(text)
        if tokens <= threshold:
            return None
        stored = _store(repos, config, conversation_id, text, name, tokens)
        return file_reference(stored), stored

    def note(meta: dict[str, Any] | None, stored: LargeFile) -> dict[str, Any]:
        ref = {"id": stored.id, "tokens": stored.token_count, "sha256": stored.sha256}
        # The original block shape (kept to rebuild the block) would carry the
        # large text back into the database; the file reference replaces it.
        cleaned = {
            k: v for k, v in (meta or {}).items() if k not in ("content", "text_block_lengths")
        }
        return {**cleaned, "large_file": ref}

    def in_text(text: str, allow_whole: bool) -> tuple[str, list[LargeFile]]:
        stored_files: list[LargeFile] = []

        def block(match: re.Match[str]) -> str:
            attrs = {m[0]: m[1] or m[2] for m in _ATTR_RE.findall(match.group("attrs") or "")}
            name = attrs.get("path") or attrs.get("name") or attrs.get("filename")
            done = externalize(match.group("body"), name)
            if done is None:
                return match.group(0)
            stored_files.append(done[1])
            return done[0]

        new_text = _FILE_BLOCK_RE.sub(block, text)
        if not stored_files and allow_whole:
            done = externalize(text, None)
            if done is not None:
                return done[0], [done[1]]
        return new_text, stored_files

    if not message.parts:
        if message.role not in ("user", "tool"):
            return message
        new_content, stored_files = in_text(message.content, allow_whole=True)
        if not stored_files:
            return message
        return _rebuilt(message, message.parts, new_content, estimator)

    new_parts: list[NewPart] = []
    changed = False
    for part in message.parts:
        text = part.text
        if not text:
            new_parts.append(part)
            continue
        if part.kind in ("tool_result", "file"):
            name = _name_from_meta(part.metadata) or (
                f"tool output {part.tool_call_id}"
                if part.kind == "tool_result" and part.tool_call_id
                else ("tool output" if part.kind == "tool_result" else None)
            )
            done = externalize(text, name)
            if done is not None:
                new_parts.append(
                    dataclasses.replace(part, text=done[0], metadata=note(part.metadata, done[1]))
                )
                replacements.append((text, done[0]))
                changed = True
                continue
        elif part.kind == "text":
            new_text, stored_files = in_text(text, allow_whole=message.role == "user")
            if stored_files:
                meta = dict(part.metadata or {})
                meta["large_files"] = [f.id for f in stored_files]
                new_parts.append(dataclasses.replace(part, text=new_text, metadata=meta))
                replacements.append((text, new_text))
                changed = True
                continue
        new_parts.append(part)
    if not changed:
        return message
    if message.content == render_content(message.parts):
        new_content = render_content(new_parts)
    else:
        # The source's plain-string content (kept as-is by the parsers): swap
        # the large texts inside it, falling back to a re-render if it does not
        # contain them verbatim.
        new_content = message.content
        for old, new in replacements:
            if old not in new_content:
                new_content = render_content(new_parts)
                break
            new_content = new_content.replace(old, new, 1)
    return _rebuilt(message, tuple(new_parts), new_content, estimator)


def _rebuilt(
    message: NewMessage,
    parts: tuple[NewPart, ...],
    content: str,
    estimator: Callable[[str], int],
) -> NewMessage:
    meta = dict(message.metadata or {})
    meta["large_files_externalized"] = True
    return dataclasses.replace(
        message,
        parts=parts,
        content=content,
        token_count=None if message.token_count is None else estimator(content),
        metadata=meta,
    )
