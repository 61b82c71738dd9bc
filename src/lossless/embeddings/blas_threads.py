"""How many threads numpy's BLAS may use, set after numpy is loaded.

OpenBLAS reads ``OPENBLAS_NUM_THREADS`` only when it loads, and another
import may have loaded numpy before the embedder: the count is set through
OpenBLAS's own entry point instead (found the way threadpoolctl finds it,
among the libraries this process has mapped). The worker embeds on one
thread beside the user's work: BLAS threads spinning on a busy machine cost
CPU they do not give back in speed. Best effort: with another BLAS (macOS
Accelerate, MKL) nothing is changed.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def _openblas_paths() -> list[str]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    found: list[str] = []
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
        if "openblas" in Path(path).name.lower() and path not in found:
            found.append(path)
    return found


def limit_blas_threads(threads: int) -> bool:
    """Set OpenBLAS's thread count; whether an OpenBLAS was found and set."""
    import numpy  # noqa: F401  (loads numpy's BLAS, so it is mapped)

    done = False
    for path in _openblas_paths():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter(ctypes.c_int(threads))
                done = True
                break
    return done
