#!/usr/bin/env bash
# The README's main job, on the embedded default (SQLite + offline extractive
# summarizer, no API key): import a sample session into a throwaway LCM_HOME,
# show status, grep, compact, and expand a summary back to its sources.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export LCM_HOME="${LCM_HOME:-$(mktemp -d)}"
# Small thresholds so a 120-record sample has something to compact.
export LCM_FRESH_TAIL_COUNT=8 LCM_LEAF_CHUNK_TOKENS=800 LCM_LEAF_MIN_FANOUT=3

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "LCM_HOME=$LCM_HOME"
step lcm import --complete "$here/sample-session.jsonl"
step lcm status
step lcm grep 'advisory_xact_lock' --limit 3
step lcm compact --all
step lcm dag 1
summary=$(lcm grep 'advisory' --scope summaries --limit 1 --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["hits"][0]["id"])')
step lcm expand "$summary" --tokens 400
