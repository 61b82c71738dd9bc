"""Configuration precedence: defaults < config file < LCM_* env < explicit arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lossless.config import SETTINGS, load_config, mask_url
from lossless.errors import ConfigError


def test_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path, env={})
    assert config.home == tmp_path
    assert config.fresh_tail_count == 32
    assert config.leaf_chunk_tokens == 20_000
    assert config.get("summarizer.provider") == "extractive"
    assert config.db_path == tmp_path / "lcm.db"
    assert all(origin == "default" for name, origin in config.origins.items() if name != "home")


def test_precedence(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'fresh_tail_count = 10\nleaf_target_tokens = 900\n[summarizer]\nprovider = "openai"\n'
    )
    env = {"LCM_FRESH_TAIL_COUNT": "20", "LCM_CONTEXT_THRESHOLD": "0.5"}
    config = load_config(tmp_path, env=env, overrides={"fresh_tail_count": 30})
    assert config.fresh_tail_count == 30 and config.origins["fresh_tail_count"] == "argument"
    assert config.leaf_target_tokens == 900
    assert config.origins["leaf_target_tokens"].startswith("file ")
    assert config.context_threshold == 0.5
    assert config.origins["context_threshold"] == "env LCM_CONTEXT_THRESHOLD"
    assert config.summarizer_provider == "openai"


def test_home_from_env(tmp_path: Path) -> None:
    config = load_config(env={"LCM_HOME": str(tmp_path / "h")})
    assert config.home == tmp_path / "h" and config.origins["home"] == "env LCM_HOME"


@pytest.mark.parametrize(
    ("content", "env", "message"),
    [
        ("fresh_tail_count = 'many'\n", {}, "fresh_tail_count"),
        ("nonsense = 1\n", {}, "unknown setting 'nonsense'"),
        ("this is = not toml\n", {}, "config.toml:1: not valid TOML"),
        ("", {"LCM_STORAGE_BACKEND": "mongodb"}, "not one of sqlite, postgresql"),
        ("", {"LCM_REDACTION_ENABLED": "maybe"}, "redaction.enabled"),
        ("", {"LCM_LEAF_CHUNK_TOKENS": "1.5"}, "LCM_LEAF_CHUNK_TOKENS"),
    ],
)
def test_bad_values_name_the_setting(
    tmp_path: Path, content: str, env: dict[str, str], message: str
) -> None:
    (tmp_path / "config.toml").write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path, env=env)


def test_secrets_are_masked(tmp_path: Path) -> None:
    config = load_config(
        tmp_path,
        env={
            "LCM_POSTGRES_URL": "postgresql://u:s3cret@h:5432/d",
            "LCM_SUMMARIZER_API_KEY": "sk-abc",
        },
    )
    shown = dict((name, value) for name, value, _ in config.display())
    assert shown["postgres.url"] == "postgresql://u:****@h:5432/d"
    assert shown["summarizer.api_key"] == "****"
    assert mask_url("postgresql://h/d") == "postgresql://h/d"


def test_every_setting_has_help_and_env_name() -> None:
    for setting in SETTINGS:
        assert setting.help.endswith(".")
        assert setting.env.startswith("LCM_") and setting.env.isupper()


def test_postgres_connect_timeout_setting(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from lossless.cli import cli

    assert load_config(tmp_path, env={}).get("postgres.connect_timeout_s") == 5
    env = {"LCM_HOME": str(tmp_path), "LCM_POSTGRES_CONNECT_TIMEOUT_S": "12"}
    config = load_config(tmp_path, env=env)
    assert config.postgres_connect_timeout_s == 12
    result = CliRunner(env=env).invoke(cli, ["config", "show", "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    shown = json.loads(result.stdout)["postgres.connect_timeout_s"]
    assert (shown["value"], shown["origin"]) == ("12", "env LCM_POSTGRES_CONNECT_TIMEOUT_S")
    assert (shown["type"], shown["default"]) == ("int", 5)
    with pytest.raises(ConfigError, match="LCM_POSTGRES_CONNECT_TIMEOUT_S"):
        load_config(tmp_path, env={"LCM_POSTGRES_CONNECT_TIMEOUT_S": "2.5"})


def test_every_setting_is_a_typed_attribute(tmp_path: Path) -> None:
    import inspect
    import typing

    from lossless.config import SETTINGS, Config

    # A class-level __getattr__ would make mypy accept any name, unchecked.
    assert "__getattr__" not in vars(Config)
    config = load_config(tmp_path, env={})
    for setting in SETTINGS:
        prop = inspect.getattr_static(Config, setting.attr)
        assert isinstance(prop, property), setting.name
        declared = typing.get_type_hints(prop.fget)["return"]
        assert declared is setting.type, (setting.name, declared)
        value = getattr(config, setting.attr)
        assert type(value) is setting.type and value == setting.default, setting.name
    with pytest.raises(AttributeError):
        _ = config.summarizer_providr  # type: ignore[attr-defined]


def test_summarizer_settings_come_together(tmp_path: Path) -> None:
    config = load_config(
        tmp_path,
        env={"LCM_SUMMARIZER_PROVIDER": "openai", "LCM_SUMMARIZER_TIMEOUT_S": "7"},
        overrides={"summarizer_command": "claude -p"},
    )
    settings = config.summarizer
    assert (settings.provider, settings.timeout_s, settings.command) == ("openai", 7.0, "claude -p")
    assert settings.retries == 2 and settings.model == "" and settings.api_key == ""
