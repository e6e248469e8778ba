"""Store the evidence hash of open items that have none, so that they can be decided."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.services.evidence_backfill import backfill_evidence_hashes


class Command(BaseCommand):
    help = (
        "Store the evidence hash of every open item (pending, leased or on hold) that has none: "
        "items from before every writer of evidence stored it. The decide refuses such items "
        "as changed evidence until they have one. Safe while the "
        "console runs: a row that changes while it is hashed is skipped. Batches commit on "
        "their own; run it again to pick up what was skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=500, help="items per transaction")
        parser.add_argument("--dry-run", action="store_true", help="count the items, store nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["batch"] <= 10_000:
            raise CommandError("--batch must be between 1 and 10000.")
        read = stored = 0
        for batch in backfill_evidence_hashes(batch=options["batch"], dry_run=options["dry_run"]):
            read += batch.read
            stored += batch.stored
            if options["verbosity"] > 1:
                self.stdout.write(f"up to item {batch.last_id}: {batch.stored} of {batch.read}")
        if options["dry_run"]:
            self.stdout.write(f"{read} open items have no stored evidence hash.")
            return
        skipped = read - stored
        message = f"Stored the evidence hash of {stored} open items."
        if skipped:
            message += f" {skipped} changed while being read; run again to hash them."
        self.stdout.write(self.style.SUCCESS(message))
