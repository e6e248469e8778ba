"""Export blind QA reviews with both verdicts (and any adjudication), for auditors."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.exports import FORMATS
from queue_app.exports_qa import qa_export_lines, qa_reviews
from queue_app.management.commands.export_decisions import _moment


class Command(BaseCommand):
    help = (
        "Export QA reviews since --since: the sampled decision's reviewer, verdict and reason, "
        "the QA reviewer's, whether they agree, and how a disagreement was adjudicated."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="ISO date or date-time, inclusive (UTC if naive).")
        parser.add_argument("--queue", help="Queue slug; all queues if omitted.")
        parser.add_argument("--format", choices=FORMATS, default="csv", dest="fmt")
        parser.add_argument("--output", help="File to write; standard output if omitted.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            since = _moment(options["since"]) if options["since"] else None
        except ValueError:
            raise CommandError(f"--since {options['since']!r} is not an ISO date") from None
        reviews = qa_reviews(since=since, queue=options["queue"])
        lines = qa_export_lines(reviews, fmt=options["fmt"])
        if not options["output"]:
            for line in lines:
                self.stdout.write(line, ending="")
            return
        with open(options["output"], "w", encoding="utf-8", newline="") as out:
            out.writelines(lines)
