"""Move abandoned items to their escalation queues once (the cron form of the worker's sweep)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.services import escalate_abandoned


class Command(BaseCommand):
    help = (
        "Move items leased escalation_threshold times without a decision to their queue's "
        "escalation queue. Each move is logged (item_id, trace_id, queue). Safe to run from "
        "cron while the apply worker sweeps too: items are taken with SKIP LOCKED."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch", type=int, default=500, help="Items moved per transaction (1..10000)."
        )

    def handle(self, *args: Any, batch: int, **options: Any) -> None:
        if not 1 <= batch <= 10_000:
            raise CommandError("--batch must be between 1 and 10000.")
        total = 0
        # Short transactions, one batch each, until a batch comes back short: a large backlog
        # never holds thousands of row locks at once.
        while True:
            moved = escalate_abandoned(limit=batch)
            total += moved
            if moved < batch:
                break
        self.stdout.write(f"Moved {total} abandoned item{'s' if total != 1 else ''} to escalation.")
