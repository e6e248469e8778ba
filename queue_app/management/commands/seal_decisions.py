"""Seal committed decisions and second-person outcomes into the chain now (the apply worker
does this continuously)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.chain import SealRefused, inclusion_proof, outcome_inclusion_proof, seal_all

# --prove / --prove-outcome: the proof, and what to say when the entry is not sealed.
PROOFS = (
    (
        "prove",
        inclusion_proof,
        "Decision {} is not sealed (it does not exist, was made before sealing began, or is "
        "waiting for the sealer).",
    ),
    (
        "prove_outcome",
        outcome_inclusion_proof,
        "Lane task {} has no sealed outcome (it does not exist, is not done, or its outcome is "
        "waiting for the sealer).",
    ),
)


class Command(BaseCommand):
    help = (
        "Seal every committed, unsealed decision and second-person outcome (check, QA review, "
        "adjudication) into batches; with --prove ID (or --prove-outcome TASK_ID), print the "
        "Merkle inclusion proof of one sealed decision (or lane task's outcome) instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        proofs = parser.add_mutually_exclusive_group()
        proofs.add_argument("--prove", type=int, metavar="DECISION_ID")
        proofs.add_argument("--prove-outcome", type=int, metavar="TASK_ID")

    def handle(self, *args: Any, **options: Any) -> None:
        for option, prove, missing in PROOFS:
            if options[option] is not None:
                proof = prove(options[option])
                if proof is None:
                    raise CommandError(missing.format(options[option]))
                self.stdout.write(json.dumps(proof, indent=2))
                return
        try:
            sealed = seal_all(wait=True)
        except SealRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"Sealed {sealed} decisions and outcomes."))
