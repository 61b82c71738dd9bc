"""How hard the torture suite pushes: short by default (CI), long on demand.

``LCM_TORTURE_LONG=1`` is the long local mode: 60 kills per phase, 2,000
generated cases per property test, every transcript and longer sessions.
``LCM_TORTURE_TRIALS``, ``LCM_TORTURE_EXAMPLES`` and ``LCM_TORTURE_SEED``
each override one knob (a failure is replayed with its seed).
"""

from __future__ import annotations

import os

LONG = os.environ.get("LCM_TORTURE_LONG", "") not in ("", "0")
#: Kills per phase (SIGKILL tests), growth steps (concurrency).
TRIALS = int(os.environ.get("LCM_TORTURE_TRIALS", "60" if LONG else "3"))
#: Generated cases per property-based test.
EXAMPLES = int(os.environ.get("LCM_TORTURE_EXAMPLES", "2000" if LONG else "40"))
SEED = int(os.environ.get("LCM_TORTURE_SEED", "20261201"))


def scaled(short: int, long: int) -> int:
    """A size for the mode: ``short`` by default, ``long`` in the long mode."""
    return long if LONG else short
