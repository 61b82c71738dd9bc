"""Generate ``docs/configuration.md`` from ``SETTINGS``, so the reference cannot drift.

    python -m lossless.config_reference > docs/configuration.md

``tests/test_config_reference.py`` fails when the file and the code disagree.
"""

from __future__ import annotations

from lossless.config import SETTINGS
from lossless.summarize.anthropic import DEFAULT_ANTHROPIC_MODEL
from lossless.summarize.openai import DEFAULT_OPENAI_MODEL

_INTRO = """\
# Configuration

Generated from the code by `python -m lossless.config_reference > docs/configuration.md`;
a test fails when it is stale.

Every setting can be given, lowest to highest precedence: its default <
`$LCM_HOME/config.toml` (`~/.lcm/config.toml` by default) < its `LCM_*` environment
variable < an explicit argument (`Engine.open(fresh_tail_count=16)`). In `config.toml`
a dotted name is a table and a key: `summarizer.provider` is `provider` under
`[summarizer]`.

- `lcm config show` prints every setting with its value, where that value came from,
  its type, default, environment variable and meaning (`--json` for scripts).
- `lcm config set NAME VALUE` checks the value and writes it into `config.toml`,
  keeping your comments and the rest of the file; `lcm config unset NAME` removes it.
- A mistake in `config.toml` (a line that is not TOML, an unknown name, a bad value)
  costs only that line: hooks keep capturing with the valid settings, the MCP server
  starts, and `lcm status`, `lcm doctor` and `lcm config show` name the file and line.
  Other commands refuse to run until it is fixed, naming the line.
"""

_SUMMARIZER = f"""\
## Setting up a summarizer

The default, `extractive`, works offline and costs nothing: it keeps the most
informative sentences, identifiers and file names. A model writes better summaries
and lets `lcm_expand_query` answer questions. Check any set-up with `lcm doctor`.

### Anthropic

```toml
[summarizer]
provider = "anthropic"
model = "{DEFAULT_ANTHROPIC_MODEL}"   # the default when empty
```

The key is `summarizer.api_key` (or `LCM_SUMMARIZER_API_KEY`); left empty, the
Anthropic SDK finds `ANTHROPIC_API_KEY` itself. With a custom `base_url` the
environment's key is never sent to that other server: set `summarizer.api_key`
for it.

### OpenAI

```toml
[summarizer]
provider = "openai"
model = "{DEFAULT_OPENAI_MODEL}"   # the default when empty
```

The key is `summarizer.api_key`, else the SDK's `OPENAI_API_KEY`.

### A local OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio)

```toml
[summarizer]
provider = "openai"
base_url = "http://localhost:11434/v1"   # Ollama; vLLM: http://localhost:8000/v1
model = "llama3.1:8b"
```

No key is needed: a placeholder is sent, and `OPENAI_API_KEY` from your environment
is not sent to a server you named yourself (set `summarizer.api_key` if yours wants
one).

### Any command (`claude -p`, `llm`, `ollama run`)

```toml
[summarizer]
provider = "command"
command = "claude -p"      # or: "llm -m gpt-4o-mini", "ollama run llama3.1:8b"
timeout_s = 120
```

The command receives the whole prompt on **stdin** (never in its arguments, which
other local users can see) and must print the summary on stdout; a non-zero exit or
a timeout counts as a failed call (retried `summarizer.retries` times). It runs in
its own process group, so a timeout stops everything it started, and with
`LCM_IN_SUMMARIZER=1` in its environment, so lossless's own hooks do not capture
that session.

### A spend cap for paid providers

```toml
[summarizer]
provider = "anthropic"
max_calls_per_hour = 200
max_tokens_per_day = 2000000
```

Every `anthropic` and `openai` call is recorded in `$LCM_HOME/summarizer-spend.db`
(hooks, the worker and the CLI share it). Past any `max_*` cap, summaries come from
the offline extractive summarizer, and `lcm compact` says so; `lcm_expand_query`
answers fail as unavailable until the hour or day has room again. `lcm status`
shows the use against each cap. 0 (the default) means no cap.

### Is it working?

`lcm doctor` makes one tiny real call to the configured provider (at most 20
seconds; `--no-probe` skips it) and reports a failure with its cause. `lcm compact`
and `lcm status` count the summaries of each escalation level: many `fallback`
summaries (truncations) mean the model calls are failing, and both say why.
"""


def render() -> str:
    """The whole of ``docs/configuration.md``."""
    lines = [_INTRO, "## Settings", ""]
    lines.append("| setting | type | default | environment variable | meaning |")
    lines.append("|---|---|---|---|---|")
    for setting in SETTINGS:
        default = "(empty)" if setting.default == "" else f"`{setting.default!r}`"
        meaning = setting.help.replace("|", "\\|")
        if setting.choices:
            meaning += " One of: " + ", ".join(f"`{c}`" for c in setting.choices) + "."
        if setting.secret:
            meaning += " Secret: masked in `lcm config show`."
        lines.append(
            f"| `{setting.name}` | {setting.type.__name__} | {default} | "
            f"`{setting.env}` | {meaning} |"
        )
    lines += ["", _SUMMARIZER]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(render(), end="")
