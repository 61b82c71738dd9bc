"""Whether the installed lossless code is still the code a hook server runs.

An upgrade must never be served by old code. ``pip install`` adds, replaces
and removes files, which changes the modification time of their folders:
stat-ing the package's ~20 folders and ``__init__.py`` (which holds the
version) is cheap enough for every request. An edit in place (an editable
install being worked on) changes only its file: every file is checked after
each request, once the client has its answer, and whenever the server is idle.
"""

from __future__ import annotations

import os

Stamp = tuple[tuple[str, int, int, int], ...]


def package_root() -> str:
    import lossless

    return os.path.dirname(os.path.abspath(lossless.__file__))


class CodeIdentity:
    """The stamps of lossless's folders and source files, taken at start."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root if root is not None else package_root()
        self.folders: list[str] = []
        self.files: list[str] = []
        for folder, subfolders, names in os.walk(self.root):
            subfolders[:] = sorted(s for s in subfolders if s != "__pycache__")
            self.folders.append(folder)
            self.files.extend(
                os.path.join(folder, name)
                for name in sorted(names)
                if name.endswith((".py", ".sql", ".json", ".toml"))
            )
        self.quick = [*self.folders, os.path.join(self.root, "__init__.py")]
        self._quick = _stamp(self.quick)
        self._full = _stamp(self.files)

    def quick_change(self) -> bool:
        """A file added, replaced or removed anywhere in the package, or a new version."""
        return _stamp(self.quick) != self._quick

    def any_change(self) -> bool:
        """``quick_change``, or any source file edited in place."""
        return self.quick_change() or _stamp(self.files) != self._full


def _stamp(paths: list[str]) -> Stamp:
    stamps = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamps.append((path, -1, -1, -1))
            continue
        stamps.append((path, st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(stamps)
