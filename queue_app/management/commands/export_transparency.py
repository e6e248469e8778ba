"""Export the transparency report of a period (as /ops/transparency.csv|json serve it)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.selectors.transparency_report import (
    PeriodError,
    export_csv,
    export_json,
    parse_period,
    read_transparency_report,
)


class Command(BaseCommand):
    help = (
        "Export the transparency report of a period (DSA Articles 15 and 24): restrictions by "
        "category, ground and kind, the automated share, statements built, sent and failing, "
        "and median handling times; per queue with a statement policy and over all of them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--from", dest="first", required=True, help="First day, YYYY-MM-DD (included)."
        )
        parser.add_argument(
            "--to", dest="last", required=True, help="Last day, YYYY-MM-DD (included)."
        )
        parser.add_argument("--format", choices=("csv", "json"), default="csv", dest="fmt")
        parser.add_argument("--output", help="File to write; standard output if omitted.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            period = parse_period(options["first"], options["last"])
        except PeriodError as exc:
            raise CommandError(str(exc)) from None
        report = read_transparency_report(period)
        if options["fmt"] == "csv":
            text = export_csv(report)
        else:
            text = json.dumps(export_json(report), indent=2) + "\n"
        if not options["output"]:
            self.stdout.write(text, ending="")
            return
        with open(options["output"], "w", encoding="utf-8", newline="") as out:
            out.write(text)
