"""Export the oversight figures of machine suggestions (as /ops/ shows them), for auditors."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.selectors.oversight import WINDOW, export_csv, export_json, read_oversight


class Command(BaseCommand):
    help = (
        "Export the oversight figures: people's agreement with machine suggestions per "
        "confidence band, with the suggestion seen before the choice and without, automatic "
        "decisions against blind QA, and each reviewer's follow rate; per queue and overall."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=("csv", "json"), default="csv", dest="fmt")
        parser.add_argument(
            "--days",
            type=int,
            default=WINDOW.days,
            help=f"Decisions of the last N days (default {WINDOW.days}).",
        )
        parser.add_argument("--output", help="File to write; standard output if omitted.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["days"] < 1:
            raise CommandError("--days must be at least 1")
        figures = read_oversight(window=timedelta(days=options["days"]))
        if options["fmt"] == "csv":
            text = export_csv(figures)
        else:
            text = json.dumps(export_json(figures), indent=2) + "\n"
        if not options["output"]:
            self.stdout.write(text, ending="")
            return
        with open(options["output"], "w", encoding="utf-8", newline="") as out:
            out.write(text)
