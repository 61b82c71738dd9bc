"""``WalKeeper``: the idle connection the hook server keeps so that each hook's close is cheap."""

from __future__ import annotations

from pathlib import Path

from lossless.config import load_config
from lossless.store import idle_keeper, open_store


def test_held_store_keeps_its_log_when_another_connection_closes(tmp_path: Path) -> None:
    config = load_config(tmp_path / "home")
    keeper = idle_keeper(config)
    assert keeper is not None
    keeper.refresh()
    assert not keeper.holding and not config.db_path.exists()  # never creates the store
    open_store(config).close()
    wal = Path(f"{config.db_path}-wal")
    # Alone, the last close checkpoints and deletes the log (two fdatasyncs).
    assert not wal.exists()
    keeper.refresh()
    assert keeper.holding
    open_store(config).close()
    assert wal.exists()  # that close was not the last: no checkpoint, no fsync
    keeper.close()
    assert not wal.exists()  # the keeper's own close checkpoints


def test_a_replaced_store_is_held_anew(tmp_path: Path) -> None:
    config = load_config(tmp_path / "home")
    open_store(config).close()
    keeper = idle_keeper(config)
    assert keeper is not None
    keeper.refresh()
    assert keeper.holding
    moved = tmp_path / "old.db"
    config.db_path.rename(moved)
    keeper.refresh()
    assert not keeper.holding  # gone: nothing held, nothing created
    assert not config.db_path.exists()
    open_store(config).close()
    keeper.refresh()
    assert keeper.holding
    keeper.close()
