"""Write queue_app/db/schema.sql from the migrated database (`make schema`)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection

from queue_app.db import schema


class Command(BaseCommand):
    help = (
        "Write queue_app/db/schema.sql, the schema's functions, triggers, constraints and views "
        "as the database defines them. Run `migrate` first: the file shows what the database has."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        path = schema.write(connection)
        if options["verbosity"] > 0:
            self.stdout.write(f"wrote {path}")
