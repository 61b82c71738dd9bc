"""Realistic source material for summarizer tests, rendered the way the engine renders it."""

from __future__ import annotations

from lossless.summarize.source import format_message_block, format_summary_block, join_blocks

# Things a useful summary of the chunk below must keep.
PLANTED_PATH = "src/billing/invoice_export.py"
PLANTED_ERROR = "psycopg.errors.UndefinedColumn: column invoices.tax_region does not exist"
PLANTED_COMMAND = "alembic upgrade head"
PLANTED_DECISION = "Decided to backfill tax_region in the migration instead of the exporter"
PLANTED_TIMESTAMP = "2026-02-17 07:41"


def _tool_noise(n: int) -> str:
    return "\n".join(
        f"    {i:>4}  INFO  worker-{i % 7}  processed batch {i} of customer records ok"
        for i in range(n)
    )


def build_transcript() -> str:
    blocks = [
        format_message_block(
            "user",
            "2026-02-17T07:37:12.000Z",
            "The nightly invoice export is failing since yesterday's deploy. Please find out "
            "why and fix it; the finance team needs the CSV by 09:00.",
        ),
        format_message_block(
            "assistant",
            "2026-02-17T07:37:30.000Z",
            "Let me look at the export job logs first.\n"
            '[tool_use Bash] {"command": "journalctl -u invoice-export --since today", '
            '"description": "Read export logs"}',
        ),
        format_message_block(
            "tool",
            "2026-02-17T07:37:41.000Z",
            _tool_noise(120)
            + "\nTraceback (most recent call last):\n"
            + f'  File "/srv/app/{PLANTED_PATH}", line 88, in export_month\n'
            + "    rows = session.execute(stmt).all()\n"
            + PLANTED_ERROR
            + "\n"
            + _tool_noise(40),
        ),
        format_message_block(
            "assistant",
            "2026-02-17T07:39:02.000Z",
            f"The exporter in {PLANTED_PATH} selects invoices.tax_region, which was added by "
            "migration 0042 but the migration never ran in production. "
            "I will check the migration state.\n"
            f"$ {PLANTED_COMMAND} --sql | head -20",
        ),
        format_message_block("user", "2026-02-17T07:40:05.000Z", "ok"),
        format_message_block(
            "assistant",
            "2026-02-17T07:41:10.000Z",
            f"{PLANTED_DECISION}, because old invoices have no region and the exporter "
            "should stay a pure read. Running it now:\n"
            f"$ {PLANTED_COMMAND}\n"
            "INFO  [alembic.runtime.migration] Running upgrade 0041 -> 0042, add tax_region\n"
            "Export re-run finished: 18,240 invoices written to "
            "s3://finance-exports/2026-02/invoices.csv in 41s.",
        ),
        format_message_block(
            "assistant",
            "2026-02-17T07:43:55.000Z",
            "Sure! Happy to help further. Let me know if there is anything else.\n"
            "Thanks for your patience while I looked into this issue today.",
        ),
    ]
    return join_blocks(blocks)


def build_condensation_input() -> str:
    return join_blocks(
        [
            format_summary_block(
                "2026-02-17T07:37:12.000Z",
                "2026-02-17T08:02:00.000Z",
                f"Invoice export failed with {PLANTED_ERROR}.\n"
                f"{PLANTED_DECISION}.\n"
                "Expand for details about: full journalctl output, migration SQL",
                summary_id="sum_aaaaaaaaaaaaaaaa",
                depth=0,
            ),
            format_summary_block(
                "2026-02-17T09:10:00.000Z",
                "2026-02-17T09:55:00.000Z",
                "Added a CI check that fails when alembic heads diverge (ci/check_migrations.sh).\n"
                "The user asked to also alert on export runs longer than 5 minutes; "
                "left open for tomorrow.\n" + "Routine chatter about lunch plans.\n" * 30,
                summary_id="sum_bbbbbbbbbbbbbbbb",
                depth=0,
            ),
        ]
    )
