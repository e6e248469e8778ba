"""Write a signed checkpoint of the decision chain's head(s) to a file, stdout or a webhook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app import chain_checkpoints
from queue_app.errors import EffectError


class Command(BaseCommand):
    help = (
        "Emit the decision chain's head(s), signed with REVIEW_CHECKPOINT_KEY (Ed25519), so the "
        "log can later be proved to extend it (verify_decisions --checkpoint FILE)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", default="-", help="File to write (replaced atomically); '-' is stdout."
        )
        parser.add_argument("--webhook", default="", help="Also POST the checkpoint to this URL.")
        parser.add_argument(
            "--emit",
            action="store_true",
            help=(
                "Write a timestamped file into REVIEW_CHECKPOINT_DIR and POST it to "
                "REVIEW_CHECKPOINT_WEBHOOK, as the apply worker does (for a timer)."
            ),
        )
        parser.add_argument(
            "--generate-key",
            action="store_true",
            help="Print a new key pair for REVIEW_CHECKPOINT_KEY / _PUBLIC_KEY and exit.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["generate_key"]:
            private, public = chain_checkpoints.generate_key()
            self.stdout.write(f"REVIEW_CHECKPOINT_KEY={private}\n")
            self.stdout.write(f"REVIEW_CHECKPOINT_PUBLIC_KEY={public}\n")
            return
        if options["emit"]:
            try:
                path = chain_checkpoints.emit()
            except (chain_checkpoints.CheckpointError, EffectError, OSError) as exc:
                raise CommandError(str(exc)) from None
            self.stderr.write(f"checkpoint written to {path}")
            return
        try:
            document = chain_checkpoints.make_checkpoint()
            text = chain_checkpoints.dumps(document)
            if options["webhook"]:
                chain_checkpoints.post(options["webhook"], text)
        except (chain_checkpoints.CheckpointError, EffectError) as exc:
            raise CommandError(str(exc)) from None
        if options["output"] == "-":
            self.stdout.write(text, ending="")
            return
        chain_checkpoints.write_atomically(Path(options["output"]), text)
        heads = ", ".join(f"{h['chain']} #{h['seq']}" for h in document["chains"]) or "empty"
        self.stderr.write(f"checkpoint written to {options['output']} ({heads})")
