"""Recompute the decision hash chain and name the first broken link."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from queue_app.chain import verify_chain


class Command(BaseCommand):
    help = "Verify the tamper-evident hash chain over all decisions; exit non-zero if broken."

    def handle(self, *args, **options) -> None:
        result = verify_chain()
        if not result.ok:
            raise CommandError(result.message)
        self.stdout.write(self.style.SUCCESS(result.message))
