"""A resident hook server per data home, and the tiny client ``lcm hook`` runs first.

A hook process spends most of its time importing: the interpreter, the
standard library the hook path needs, lossless's own modules. The hook's
actual work (read the delta, store it, recall) is a small part. So, as dmypy
or the gradle daemon do, one long-lived process per home keeps those modules
loaded and runs the very same hook code (``lossless.hooks.main``) for each
request, and ``lcm hook`` becomes a client that imports almost nothing:

- ``client``: what ``lcm hook EVENT`` runs first. Standard library only
  (``_socket``, ``os``, ``sys``), no lossless module beyond this package's
  ``wire``. It sends argv, stdin, cwd, umask and the environment, and writes
  back the server's stdout, stderr and exit code. Anything that is not a
  clean answer (no server, a stale or foreign one, a refused or dead socket,
  a timeout, a server that dies mid-request) makes it run the hook inline, as
  without a server, and start a server for the next hook.
- ``server``: one per home (an exclusive lock), a Unix socket in
  ``$LCM_HOME/run`` (0700 folder, 0600 socket, peer uid checked). Requests are
  served one at a time; each runs with the client's environment, cwd and
  umask. It exits after ``hooks.server_idle_s`` without a request, when its
  installed code changes (``identity``), when its socket or home disappears,
  on ``lcm hook-server stop`` and when ``hooks.server`` is turned off.
- ``control``: start, find, describe and stop a home's server (hooks, the
  CLI, ``lcm doctor``/``status``, ``lcm uninstall``).
- ``wire``: the framing both sides speak, and where the socket is.
"""
