"""Installers that wire lossless into agent clients (Claude Code, Codex).

Uninstall removes exactly the entries lossless recognises as its own (commands
that run ``lcm hook`` / ``lcm mcp``, the TOML tables lossless wrote, the
permission entries it added) and leaves everything else as it was.

Modules: ``commands`` (the commands registered and recognising them),
``files`` (plans, atomic writes, JSON files), ``hooks_json`` (the hooks
document both clients use), ``claude_code`` and ``codex`` (one per client),
``codex_trust`` (Codex's per-hook trust records).
"""
