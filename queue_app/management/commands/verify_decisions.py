"""Recompute the decision hash chain and name the first broken link; check a checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app import chain_checkpoints
from queue_app.chain import verify_chain


class Command(BaseCommand):
    help = (
        "Verify the tamper-evident hash chain over all decisions and second-person outcomes; "
        "with --checkpoint, also prove "
        "the log still extends a signed checkpoint. Exit non-zero if either fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--checkpoint",
            type=Path,
            help="A checkpoint written by `manage.py checkpoint` (kept outside the database).",
        )
        parser.add_argument(
            "--public-key",
            default="",
            help="The Ed25519 public key to trust (default: REVIEW_CHECKPOINT_PUBLIC_KEY).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        document = None
        if options["checkpoint"] is not None:
            # Read and check the file before touching the database: a typo in the path should
            # not cost a full chain walk.
            try:
                text = options["checkpoint"].read_text()
            except OSError as exc:
                raise CommandError(f"Cannot read the checkpoint: {exc}") from None
            try:
                document = chain_checkpoints.parse(text)
                public_key = chain_checkpoints.trusted_public_key(options["public_key"])
            except chain_checkpoints.CheckpointError as exc:
                raise CommandError(str(exc)) from None
        result = verify_chain()
        if not result.ok:
            raise CommandError(result.message)
        self.stdout.write(self.style.SUCCESS(result.message))
        if document is not None:
            outcome = chain_checkpoints.verify_checkpoint(document, public_key)
            if not outcome.ok:
                raise CommandError(outcome.message)
            self.stdout.write(self.style.SUCCESS(outcome.message))
