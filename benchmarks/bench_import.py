"""Import throughput and peak memory.

Measures, each import in a fresh child process (its peak RSS comes from
``wait4`` on that child):

- the real transcripts in ``../shared/data`` (Claude Code + Codex), read in place;
- a generated corpus of N generic-JSONL messages (default 1,000,000) imported
  through ``Engine.import_file`` with full-text (FTS5 word + trigram) indexing;
- baselines on the same generated rows, in the same run: plain ``sqlite3``
  ``executemany`` (500-row transactions) into a table without FTS; the same
  with an FTS5 word index (unstemmed) and a trigram index, fed by a per-row
  AFTER INSERT trigger (lcm's first schema) and by one ``INSERT ... SELECT``
  per batch; the indexes the store builds (stemmed word + trigram) fed per
  batch; and the word index alone, the floor of issue 17's import target.
  Together they separate the cost of indexing, of the way it is fed, and of
  lcm itself. The store's size is given against its input and against the
  floor with the same indexes.

Usage::

    .venv/bin/python benchmarks/bench_import.py                 # 1,000,000 messages
    .venv/bin/python benchmarks/bench_import.py --messages 100000 --repeat 3
    .venv/bin/python benchmarks/bench_import.py --quick          # < 30 s sanity check
    .venv/bin/python benchmarks/bench_import.py --keep-store /tmp/lcm-bench   # for bench_grep
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import common

TARGET_MSGS_PER_S = 20_000
TARGET_RSS_MB = 300.0
TARGET_SIZE_RATIO = 1.5
TARGET_VS_FLOOR = 1.5

# --------------------------------------------------------------------------- corpus


def _split(text: str) -> list[str]:
    return text.split()


_WORDS = _split("""
the a an and of to in is it that this for on with
as be was are not but or by at from we you i they he she can will would should could may
if then than when where which what who how why all any some no more most other such only
also just very into over after before about up out so there their them these those here
have has had do does did get got make made use used using need needs see look run runs
test tests failing failed fix fixed bug error errors issue problem change changes file
files line lines function functions method class module package import export return value
values type types string number list dict map array object key keys field fields config
setting settings option options default path paths directory folder build builds compile
server client request response status code header body query database table row rows
column index migration schema transaction commit branch merge rebase push pull release
version deploy deployment container docker image cluster node pod service endpoint api
cache memory disk cpu thread threads process async await callback promise event events
handler handlers queue worker job jobs task tasks timeout retry retries log logs logging
debug warning info trace stack exception message messages user users session sessions
token tokens auth login password permission permissions access denied allowed invalid
valid missing found empty null none true false input output read write open close start
stop restart update updated delete deleted create created add added remove removed rename
check checks checked verify validate parse parser parsed format formatted encode decode
json yaml toml csv sql http https url port host local remote environment variable dev
prod staging production performance slow fast latency throughput benchmark profile
refactor cleanup rewrite implement implementation design plan approach idea think agree
let me now first next then finally already still again maybe probably actually because
since while until though although however instead otherwise please thanks great good
right wrong same different new old small large big simple complex current previous
work works working worked looks seems happens happened expected actual result results
case cases edge example examples step steps part parts way ways time times day week
python javascript typescript rust go java shell bash script scripts pytest npm pip cargo
git github ci pipeline lint linter mypy ruff formatter test_suite fixture fixtures mock
""")

_IDENT_PARTS = _split("""
user order cart item invoice payment account session token cache config settings request
response handler client server query record batch chunk buffer stream reader writer parser
lexer node tree graph edge vertex queue worker job task event message channel socket conn
pool lock mutex state store repo service manager factory builder loader validator encoder
decoder summary context window budget limit offset cursor page index key value entry row
""")

_VERBS = _split(
    "get set load save fetch parse build make find update delete create apply compute render"
)

_FILES = _split("""
src/app/main.py src/app/models.py src/app/views.py src/app/db/migrate.py src/api/routes.ts
src/api/server.ts src/lib/cache.rs src/lib/parser.rs internal/store/sqlite.go cmd/tool/main.go
tests/test_models.py tests/test_api.py tests/integration/test_db.py package.json pyproject.toml
Cargo.toml docker-compose.yml .github/workflows/ci.yml README.md docs/design.md Makefile
web/components/Button.tsx web/pages/index.tsx scripts/deploy.sh config/settings.yaml
""")

_CJK = [
    "这个函数的返回值不对，请帮我检查一下。",
    "数据库迁移失败了，日志里有重复表的错误。",
    "我们需要在部署之前运行所有的测试。",
    "缓存的过期时间应该设置为五分钟。",
    "请把配置文件里的端口改成八零八零。",
    "テストが失敗しています。原因を調べてください。",
    "このモジュールのリファクタリングをお願いします。",
    "ログにタイムアウトのエラーが出ています。",
    "사용자 세션이 만료되면 다시 로그인해야 합니다.",
    "빌드가 실패했습니다. 의존성을 확인해 주세요.",
]

_TOOLS = ["bash", "read_file", "grep", "edit_file", "list_dir", "run_tests"]


def _cumulative_zipf(n: int, exponent: float = 0.9) -> list[float]:
    total = 0.0
    out: list[float] = []
    for rank in range(1, n + 1):
        total += 1.0 / rank**exponent
        out.append(total)
    return out


class CorpusGenerator:
    """Deterministic, varied agent-transcript-like messages (prose, code, tool output, CJK).

    Lengths follow a mixture (45% short, 40% medium, 12% long, 3% very long)
    averaging about 450 characters.
    """

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self._word_cum = _cumulative_zipf(len(_WORDS))
        rng = self.rng
        self.sentences = [self._sentence() for _ in range(40_000)]
        self.snippets = [self._snippet() for _ in range(4_000)]
        self.user_asks = [self._ask() for _ in range(8_000)]
        self._call = 0
        self._moment = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
        self._hex = [f"{rng.getrandbits(32):08x}" for _ in range(50_000)]

    # -- building blocks ------------------------------------------------

    def _ident(self) -> str:
        rng = self.rng
        parts = rng.sample(_IDENT_PARTS, rng.randint(1, 3))
        return "_".join(parts)

    def _func(self) -> str:
        return f"{self.rng.choice(_VERBS)}_{self._ident()}"

    def _sentence(self) -> str:
        rng = self.rng
        words = rng.choices(_WORDS, cum_weights=self._word_cum, k=rng.randint(5, 22))
        roll = rng.random()
        if roll < 0.15:
            words.insert(rng.randrange(len(words)), f"`{self._func()}()`")
        elif roll < 0.25:
            words.insert(rng.randrange(len(words)), rng.choice(_FILES))
        elif roll < 0.3:
            words.insert(rng.randrange(len(words)), f"v{rng.randint(0, 9)}.{rng.randint(0, 40)}")
        text = " ".join(words)
        return text[0].upper() + text[1:] + rng.choice(".....?!:")

    def _ask(self) -> str:
        rng = self.rng
        opening = rng.choice(
            [
                "Can you",
                "Please",
                "Could you",
                "Now",
                "Next,",
                "Why does",
                "How do I",
                "I think we should",
            ]
        )
        verb = rng.choice(
            ["fix", "check", "refactor", "explain", "add a test for", "look at", "speed up"]
        )
        target = rng.choice([f"`{self._func()}`", rng.choice(_FILES), f"the {self._ident()} code"])
        tail = rng.choice(
            [
                "",
                " It fails on CI.",
                " The build is red again.",
                " It worked yesterday.",
                " Keep the public API unchanged.",
                f" See line {rng.randint(10, 900)}.",
            ]
        )
        return f"{opening} {verb} {target}?{tail}"

    def _snippet(self) -> str:
        rng = self.rng
        name, arg, other = self._func(), self._ident(), self._ident()
        kind = rng.randrange(5)
        if kind == 0:
            return (
                f"def {name}({arg}: dict[str, Any], limit: int = {rng.randint(1, 500)}) -> list[str]:\n"
                f'    """Return the {other} entries of {arg}."""\n'
                f"    out = []\n    for key, value in {arg}.items():\n"
                f"        if value is None or len(out) >= limit:\n            continue\n"
                f'        out.append(f"{{key}}={{value}}")\n    return out\n'
            )
        if kind == 1:
            return (
                f"export async function {name}({arg}: Request): Promise<Response> {{\n"
                f"  const {other} = await db.query('SELECT * FROM {rng.choice(_IDENT_PARTS)}s WHERE id = $1', [{arg}.id]);\n"
                f"  if (!{other}) throw new Error('not found: ' + {arg}.id);\n"
                f"  return Response.json({other});\n}}\n"
            )
        if kind == 2:
            return (
                f"fn {name}({arg}: &str) -> Result<{other.title().replace('_', '')}, Error> {{\n"
                f"    let parts: Vec<&str> = {arg}.split(',').collect();\n"
                f'    ensure!(parts.len() == {rng.randint(2, 6)}, "bad {other}");\n'
                f"    Ok(parse_parts(&parts)?)\n}}\n"
            )
        if kind == 3:
            table = rng.choice(_IDENT_PARTS)
            return (
                f"CREATE TABLE {table}s (\n    id INTEGER PRIMARY KEY,\n    {arg} TEXT NOT NULL,\n"
                f"    created_at TIMESTAMP DEFAULT now()\n);\n"
                f"CREATE INDEX {table}s_{arg} ON {table}s({arg});\n"
            )
        return (
            f"$ git diff --stat\n {rng.choice(_FILES)} | {rng.randint(1, 80)} "
            f"{'+' * rng.randint(1, 12)}{'-' * rng.randint(0, 6)}\n"
            f" 1 file changed, {rng.randint(1, 60)} insertions(+), {rng.randint(0, 30)} deletions(-)\n"
        )

    def _tool_output(self, target: int) -> str:
        rng = self.rng
        kind = rng.randrange(6)
        lines: list[str] = []
        size = 0
        while size < target:
            if kind == 0:
                test = f"tests/test_{self._ident()}.py::test_{self._func()}"
                line = f"{test} {rng.choice(['PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'])}"
            elif kind == 1:
                line = (
                    f"-rw-r--r--  1 dev staff {rng.randint(100, 99_999):>6} Jan {rng.randint(1, 28):>2} "
                    f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {self._ident()}.{rng.choice(['py', 'ts', 'rs', 'md', 'json'])}"
                )
            elif kind == 2:
                line = (
                    f'  File "{rng.choice(_FILES)}", line {rng.randint(1, 999)}, in {self._func()}\n'
                    f"    {self._ident()} = {self._func()}({self._ident()})"
                )
            elif kind == 3:
                line = (
                    f"{rng.choice(self._hex)[:7]} {rng.choice(['fix', 'feat', 'chore', 'test'])}: "
                    f"{rng.choice(self.sentences)[:60]}"
                )
            elif kind == 4:
                line = (
                    f"2025-01-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                    f"{rng.randint(0, 59):02d}Z {rng.choice(['INFO', 'INFO', 'WARN', 'ERROR', 'DEBUG'])} "
                    f"{self._ident()}: request_id={rng.choice(self._hex)} status={rng.choice([200, 200, 201, 404, 500])} "
                    f"latency_ms={rng.randint(1, 2500)}"
                )
            else:
                line = json.dumps(
                    {
                        "id": rng.choice(self._hex),
                        self._ident(): rng.randint(0, 10_000),
                        "name": self._func(),
                        "ok": rng.random() < 0.8,
                    }
                )
            lines.append(line)
            size += len(line) + 1
        if kind == 2:
            lines.insert(0, "Traceback (most recent call last):")
            lines.append(
                f"{rng.choice(['KeyError', 'TypeError', 'ValueError', 'AttributeError'])}: "
                f"'{self._ident()}'"
            )
        elif kind == 0:
            failed = sum(1 for line in lines if line.endswith("FAILED"))
            lines.append(
                f"==== {failed} failed, {len(lines) - failed} passed in {rng.random() * 9:.2f}s ===="
            )
        return "\n".join(lines)

    def _prose(self, target: int, *, code: float) -> str:
        rng = self.rng
        pieces: list[str] = []
        size = 0
        while size < target:
            if rng.random() < code and size > 0:
                piece = f"```\n{rng.choice(self.snippets)}```"
            elif rng.random() < 0.05:
                piece = rng.choice(_CJK)
            else:
                piece = rng.choice(self.sentences)
            pieces.append(piece)
            size += len(piece) + 1
        return " ".join(pieces)

    def _length(self) -> int:
        roll = self.rng.random()
        if roll < 0.45:
            return self.rng.randint(40, 200)
        if roll < 0.85:
            return self.rng.randint(200, 700)
        if roll < 0.97:
            return self.rng.randint(700, 1800)
        return self.rng.randint(1800, 4000)

    # -- messages -------------------------------------------------------

    def messages(self, count: int) -> Iterator[dict[str, Any]]:
        """``count`` message dicts in a plausible agent-loop rhythm."""
        rng = self.rng
        pending_call: str | None = None
        for _ in range(count):
            self._moment += timedelta(seconds=rng.randint(1, 40), milliseconds=rng.randint(0, 999))
            created = self._moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            target = self._length()
            roll = rng.random()
            message: dict[str, Any]
            if pending_call is not None:
                message = {
                    "role": "tool",
                    "tool_call_id": pending_call,
                    "content": self._tool_output(target),
                }
                pending_call = None
            elif roll < 0.3:
                text = rng.choice(self.user_asks)
                if target > 200:
                    text += " " + self._prose(target - len(text), code=0.2)
                elif rng.random() < 0.06:
                    text += " " + rng.choice(_CJK)
                message = {"role": "user", "content": text}
            else:
                message = {"role": "assistant", "content": self._prose(target, code=0.15)}
                if rng.random() < 0.45:
                    self._call += 1
                    pending_call = f"call_{self._call:07d}"
                    tool = rng.choice(_TOOLS)
                    args = (
                        {"command": f"pytest -q tests/test_{self._ident()}.py"}
                        if tool in ("bash", "run_tests")
                        else {"path": rng.choice(_FILES), "pattern": self._func()}
                    )
                    message["tool_calls"] = [
                        {
                            "id": pending_call,
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps(args)},
                        }
                    ]
            message["created_at"] = created
            yield message


@dataclass(frozen=True, slots=True)
class Corpus:
    files: list[Path]
    messages: int
    bytes: int
    content_chars: int


def write_corpus(directory: Path, messages: int, *, files: int = 1, seed: int = 7) -> Corpus:
    """Write ``messages`` generic-JSONL messages split over ``files`` files in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    generator = CorpusGenerator(seed)
    paths: list[Path] = []
    total_bytes = 0
    chars = 0
    per_file = -(-messages // files)
    remaining = messages
    for index in range(files):
        count = min(per_file, remaining)
        remaining -= count
        path = directory / f"bench-{index:04d}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            fh.write(json.dumps({"session_id": f"bench-{index:04d}"}) + "\n")
            batch: list[str] = []
            for message in generator.messages(count):
                chars += len(message["content"])
                batch.append(json.dumps(message, ensure_ascii=False))
                if len(batch) >= 5000:
                    fh.write("\n".join(batch) + "\n")
                    batch.clear()
            if batch:
                fh.write("\n".join(batch) + "\n")
        total_bytes += path.stat().st_size
        paths.append(path)
    return Corpus(paths, messages, total_bytes, chars)


def real_transcripts() -> list[Path]:
    """The Claude Code and Codex transcripts of the shared data set (not LoCoMo)."""
    found: list[Path] = []
    for folder in ("claude-code", "codex"):
        found.extend(sorted((common.DATA / folder).rglob("*.jsonl")))
    return found


# --------------------------------------------------------------------------- children


def _child_lcm(home: Path, paths: Sequence[Path], generic: bool) -> dict[str, Any]:
    from lossless import Engine
    from lossless.engine.ingest import expand_paths

    with Engine.open(home) as engine:
        files = expand_paths(paths)
        # As `lcm import` does: the trigram index is built after the import
        # (by the worker, or by `lcm import` itself for a small backlog).
        importer = engine.importer(defer_substring_index=True)
        start, cpu = common.clock(), common.cpu_seconds()
        added = skipped = problems = 0
        for path in files:
            result = importer.import_file(path, "generic" if generic else None, final=True)
            if result.error:
                raise SystemExit(f"import of {path} failed: {result.error}")
            added += result.messages_added
            skipped += result.messages_skipped
            problems += len(result.problems)
        seconds, cpu = common.clock() - start, common.cpu_seconds() - cpu
        start, index_cpu = common.clock(), common.cpu_seconds()
        indexed = engine.build_search_index()
        index_seconds = common.clock() - start
        index_cpu = common.cpu_seconds() - index_cpu
        if indexed != added:
            raise SystemExit(f"substring index caught up {indexed} of {added} messages")
    size = sum(p.stat().st_size for p in home.glob("lcm.db*"))
    return {
        "messages": added,
        "skipped": skipped,
        "problems": problems,
        "seconds": seconds,
        "cpu_s": cpu,
        "index_seconds": index_seconds,
        "index_cpu_s": index_cpu,
        "bytes_in": sum(p.stat().st_size for p in files),
        "db_bytes": size,
    }


_FTS_TABLES = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2');"
    "CREATE VIRTUAL TABLE messages_trigram USING fts5(content, content='messages', "
    "content_rowid='id', tokenize='trigram', detail='none');"
)
# The indexes the store builds (migration 0009): the word index stemmed. lcm
# also feeds it through lcm_search_text (CJK characters as words), a Python
# function a bare sqlite3 floor does not call.
_STORE_FTS_TABLES = _FTS_TABLES.replace(
    "tokenize='unicode61 remove_diacritics 2'", "tokenize='porter unicode61 remove_diacritics 2'"
)
# lcm's schema (0001_initial.sql): both indexes fed by a per-row trigger.
_FTS_TRIGGER = (
    "CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN "
    "INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); "
    "INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content); END;"
)


def _child_raw(db_path: Path, paths: Sequence[Path], fts: str) -> dict[str, Any]:
    """Plain ``executemany`` of the messages in 500-row transactions.

    ``fts``: ``"none"``; ``"trigger"`` (lcm's schema: a per-row AFTER INSERT
    trigger feeds both FTS5 tables); ``"batch"`` (no trigger: one
    ``INSERT INTO <fts> SELECT ... WHERE id BETWEEN first AND last`` per batch);
    ``"batch-word"`` (the same for the word index alone, as lcm imports now);
    ``"batch-store"`` (the indexes the store builds: stemmed word + trigram).
    """
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, "
        "seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, created_at TEXT NOT NULL)"
    )
    if fts == "batch-store":
        db.executescript(_STORE_FTS_TABLES)
    elif fts != "none":
        db.executescript(_FTS_TABLES)
    if fts == "trigger":
        db.executescript(_FTS_TRIGGER)
    batch = {"batch": "both", "batch-word": "word", "batch-store": "both"}.get(fts, "")
    start, cpu = common.clock(), common.cpu_seconds()
    count = 0
    total_bytes = 0
    for conversation_id, path in enumerate(paths, start=1):
        total_bytes += path.stat().st_size
        rows: list[tuple[int, int, str, str, str]] = []
        seq = 0
        with path.open("rb") as fh:
            for line in fh:
                data = json.loads(line)
                if "role" not in data:
                    continue
                content = data.get("content")
                if not isinstance(content, str):
                    content = json.dumps(content, ensure_ascii=False)
                if data.get("tool_calls"):
                    content += "\n" + json.dumps(data["tool_calls"], ensure_ascii=False)
                rows.append((conversation_id, seq, data["role"], content, data["created_at"]))
                seq += 1
                if len(rows) >= 500:
                    count += _raw_flush(db, rows, batch)
            count += _raw_flush(db, rows, batch)
    seconds, cpu = common.clock() - start, common.cpu_seconds() - cpu
    db.close()
    size = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))
    return {
        "messages": count,
        "seconds": seconds,
        "cpu_s": cpu,
        "bytes_in": total_bytes,
        "db_bytes": size,
    }


def _raw_flush(
    db: sqlite3.Connection, rows: list[tuple[int, int, str, str, str]], index_batch: str
) -> int:
    """Insert ``rows``; ``index_batch``: "" (indexes fed by trigger, if any), "word"
    (the word index, one INSERT ... SELECT) or "both" (word and trigram)."""
    if not rows:
        return 0
    db.execute("BEGIN IMMEDIATE")
    first = int(db.execute("SELECT coalesce(max(id), 0) + 1 FROM messages").fetchone()[0])
    db.executemany(
        "INSERT INTO messages(conversation_id, seq, role, content, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        rows,
    )
    if index_batch:
        tables = (
            ("messages_fts",) if index_batch == "word" else ("messages_fts", "messages_trigram")
        )
        for table in tables:
            db.execute(
                f"INSERT INTO {table}(rowid, content) SELECT id, content FROM messages "
                "WHERE id >= ?",
                (first,),
            )
    db.execute("COMMIT")
    count = len(rows)
    rows.clear()
    return count


def child_main(args: argparse.Namespace) -> None:
    paths = [Path(p) for p in args.paths]
    target = Path(args.target)
    if args.child == "lcm":
        result = _child_lcm(target, paths, generic=True)
    elif args.child == "real":
        result = _child_lcm(target, paths, generic=False)
    elif args.child in ("raw", "raw-fts", "raw-fts-batch", "raw-store-batch", "raw-word-batch"):
        fts = {
            "raw": "none",
            "raw-fts": "trigger",
            "raw-fts-batch": "batch",
            "raw-store-batch": "batch-store",
            "raw-word-batch": "batch-word",
        }[args.child]
        result = _child_raw(target, paths, fts)
    else:
        raise SystemExit(f"unknown child {args.child}")
    common.emit(result)


# --------------------------------------------------------------------------- driver

BASELINES = [
    ("raw sqlite3, no FTS", "raw"),
    ("raw sqlite3 + FTS5 word + trigram, per-row trigger (lcm schema)", "raw-fts"),
    ("raw sqlite3 + FTS5 word + trigram, per-batch INSERT...SELECT", "raw-fts-batch"),
    ("raw sqlite3 + the store's indexes (stemmed word + trigram), per batch", "raw-store-batch"),
    ("raw sqlite3 + FTS5 word only, per-batch INSERT...SELECT", "raw-word-batch"),
]


@dataclass(slots=True)
class Measured:
    name: str
    messages: int
    bytes_in: int
    seconds: list[float]
    cpu_s: list[float]
    rss_mb: list[float]
    db_bytes: int
    # lcm only: building the substring (trigram) index after the import.
    index_seconds: list[float] = field(default_factory=list)
    index_cpu_s: list[float] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return common.median(self.seconds)


def measure(
    name: str, child: str, paths: Sequence[Path], workdir: Path, repeat: int, keep: Path | None
) -> Measured:
    runs: list[common.ChildRun] = []
    for attempt in range(repeat):
        target = workdir / f"{child}-{attempt}"
        if child.startswith("raw"):
            target.mkdir(parents=True)
            target = target / "raw.db"
        run = common.run_child(
            [__file__, "--child", child, "--target", str(target), *map(str, paths)]
        )
        runs.append(run)
        index = (
            f", then substring index in {run.result['index_seconds']:.2f} s"
            if "index_seconds" in run.result
            else ""
        )
        print(
            f"  {name} run {attempt + 1}/{repeat}: {run.result['messages']:,} messages in "
            f"{run.result['seconds']:.2f} s ({run.result['cpu_s']:.2f} s CPU){index}, "
            f"peak RSS {run.peak_rss_mb:.0f} MB",
            flush=True,
        )
        last = attempt == repeat - 1
        home = target.parent if child.startswith("raw") else target
        if last and keep is not None and child == "lcm":
            if keep.exists():
                shutil.rmtree(keep)
            shutil.move(str(home), keep)
            print(f"  kept the store at {keep} (LCM_HOME; database {keep / 'lcm.db'})")
        else:
            shutil.rmtree(home, ignore_errors=True)
    first = runs[0].result
    return Measured(
        name=name,
        messages=int(first["messages"]),
        bytes_in=int(first["bytes_in"]),
        seconds=[float(r.result["seconds"]) for r in runs],
        cpu_s=[float(r.result["cpu_s"]) for r in runs],
        rss_mb=[r.peak_rss_mb for r in runs],
        db_bytes=int(first["db_bytes"]),
        index_seconds=[
            float(r.result["index_seconds"]) for r in runs if "index_seconds" in r.result
        ],
        index_cpu_s=[float(r.result["index_cpu_s"]) for r in runs if "index_cpu_s" in r.result],
    )


def report(rows: list[Measured], baseline: Measured | None, floor: Measured | None = None) -> None:
    """``baseline``: bare sqlite3 without an index; ``floor``: bare sqlite3 with
    the word index lcm's import builds (issue 17's import target: <= 1.5x it)."""
    if not rows:
        return
    table: list[list[object]] = []

    def add(name: str, row: Measured, runs: list[float], cpu_runs: list[float]) -> None:
        seconds, cpu = common.median(runs), common.median(cpu_runs)
        table.append(
            [
                name,
                row.messages,
                row.bytes_in / common.MB,
                seconds,
                row.messages / seconds,
                row.bytes_in / common.MB / seconds,
                cpu,
                row.messages / cpu,
                common.median(row.rss_mb),
                max(row.rss_mb),
                row.db_bytes / common.MB,
                f"{row.db_bytes / row.bytes_in:.2f}",
                f"{seconds / baseline.median_s:.1f}x" if baseline else "-",
                f"{cpu / common.median(baseline.cpu_s):.1f}x" if baseline else "-",
                f"{cpu / common.median(floor.cpu_s):.2f}x" if floor else "-",
                len(runs),
            ]
        )

    for row in rows:
        add(row.name, row, row.seconds, row.cpu_s)
        if row.index_seconds:
            add("  then: substring (trigram) index built", row, row.index_seconds, row.index_cpu_s)
            both = [a + b for a, b in zip(row.seconds, row.index_seconds, strict=True)]
            both_cpu = [a + b for a, b in zip(row.cpu_s, row.index_cpu_s, strict=True)]
            add("  import + substring index", row, both, both_cpu)
    common.print_table(
        [
            "import",
            "messages",
            "input MB",
            "median s",
            "msgs/s",
            "MB/s",
            "median CPU s",
            "msgs/CPU s",
            "RSS MB (median)",
            "RSS MB (max)",
            "db MB",
            "db/input",
            "wall vs raw",
            "CPU vs raw",
            "CPU vs floor",
            "runs",
        ],
        table,
        title=(
            "Import throughput (median over runs; wall and CPU time of the import alone; "
            "RSS = peak RSS of the importing child process)"
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1_000_000, help="generated messages")
    parser.add_argument(
        "--files", type=int, default=1, help="split the generated corpus over N files"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per generated-corpus import")
    parser.add_argument("--real-repeat", type=int, default=5, help="runs of the real transcripts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--quick", action="store_true", help="10,000 messages, 1 run each (sanity check)"
    )
    parser.add_argument("--no-real", action="store_true", help="skip the real transcripts")
    parser.add_argument("--no-baseline", action="store_true", help="skip the raw sqlite3 runs")
    parser.add_argument("--keep-store", type=Path, help="keep the last generated lcm store here")
    parser.add_argument("--workdir", type=Path, help="scratch folder (default: a temp dir)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args)
        return 0
    if args.quick:
        args.messages, args.repeat, args.real_repeat = 10_000, 1, 1

    common.print_machine()
    scratch = Path(tempfile.mkdtemp(prefix="lcm-bench-", dir=args.workdir))
    try:
        rows: list[Measured] = []
        if not args.no_real:
            real = real_transcripts()
            print(f"real transcripts: {len(real)} files under {common.DATA}", flush=True)
            rows.append(
                measure("real transcripts (lcm)", "real", real, scratch, args.real_repeat, None)
            )
        print(f"generating {args.messages:,} messages ...", flush=True)
        corpus, gen_s = common.timed(
            lambda: write_corpus(
                scratch / "corpus", args.messages, files=args.files, seed=args.seed
            )
        )
        print(
            f"  {corpus.bytes / common.MB:.0f} MB in {len(corpus.files)} file(s), "
            f"{corpus.content_chars / corpus.messages:.0f} content chars/message on average, "
            f"written in {gen_s:.1f} s",
            flush=True,
        )
        baseline: Measured | None = None
        generated: list[Measured] = []
        if not args.no_baseline:
            for name, child in BASELINES:
                generated.append(
                    measure(f"generated: {name}", child, corpus.files, scratch, args.repeat, None)
                )
            baseline = generated[0]
        generated.append(
            measure(
                "generated: lcm import (Engine.import_file)",
                "lcm",
                corpus.files,
                scratch,
                args.repeat,
                args.keep_store,
            )
        )
        report(rows, None)
        floor = generated[len(BASELINES) - 1] if baseline is not None else None
        report(generated, baseline, floor)
        lcm = generated[-1]
        rate = lcm.messages / lcm.median_s
        cpu_rate = lcm.messages / common.median(lcm.cpu_s)
        rss = max(lcm.rss_mb)
        print(
            f"\ntargets (lcm import): >= {TARGET_MSGS_PER_S:,} msgs/s: "
            f"{'met' if rate >= TARGET_MSGS_PER_S else 'MISSED'} ({rate:,.0f} wall, "
            f"{cpu_rate:,.0f} per CPU second); peak RSS <= {TARGET_RSS_MB:.0f} MB: "
            f"{'met' if rss <= TARGET_RSS_MB else 'MISSED'} ({rss:.0f} MB)"
        )
        ratio = lcm.db_bytes / lcm.bytes_in
        print(
            f"store size <= {TARGET_SIZE_RATIO}x the input (both indexes): "
            f"{'met' if ratio <= TARGET_SIZE_RATIO else 'MISSED'} ({ratio:.2f}x generated"
            + (f", {rows[0].db_bytes / rows[0].bytes_in:.2f}x real)" if rows else ")")
        )
        if floor is not None:
            vs_floor = common.median(lcm.cpu_s) / common.median(floor.cpu_s)
            print(
                f"import CPU <= {TARGET_VS_FLOOR}x bare sqlite3 with the word index: "
                f"{'met' if vs_floor <= TARGET_VS_FLOOR else 'MISSED'} ({vs_floor:.2f}x)"
            )
            same = generated[[child for _, child in BASELINES].index("raw-store-batch")]
            both_cpu = [a + b for a, b in zip(lcm.cpu_s, lcm.index_cpu_s, strict=True)]
            print(
                "import + substring index CPU against bare sqlite3 with the store's indexes "
                f"(stemmed word + trigram): {common.median(both_cpu) / common.median(same.cpu_s):.2f}x; "
                f"store size against that floor's: {lcm.db_bytes / same.db_bytes:.2f}x "
                f"(floor {same.db_bytes / same.bytes_in:.2f}x its input)"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
