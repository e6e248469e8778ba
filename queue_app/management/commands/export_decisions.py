"""Stream every decision (with chain hash and applied time) to a file or stdout, for audit."""

from __future__ import annotations

from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from queue_app.datetimes import moment_problem
from queue_app.exports import FORMATS, decisions_between, export_lines
from queue_app.models import Queue


def _moment(text: str) -> datetime:
    """Parse an ISO date or date-time; a naive one is taken as UTC."""
    moment = parse_datetime(text)
    if moment is None:
        day = parse_date(text)
        if day is None:
            raise ValueError(text)
        moment = datetime(day.year, day.month, day.day)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    if problem := moment_problem(moment):
        raise ValueError(f"{text} ({problem})")
    return moment


class Command(BaseCommand):
    help = (
        "Export decisions created in [--since, --until) as JSON lines or CSV: reviewer, "
        "verdict, reason code, evidence hash, supersedes, corrected verdict, chain hash, "
        "applied time, status. Streams in constant memory."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="ISO date or date-time, inclusive (UTC if naive).")
        parser.add_argument("--until", help="ISO date or date-time, exclusive (UTC if naive).")
        parser.add_argument("--queue", help="Queue slug; all queues if omitted.")
        parser.add_argument("--format", choices=FORMATS, default="jsonl", dest="fmt")
        parser.add_argument("--output", help="File to write; standard output if omitted.")

    def handle(self, *args, since, until, queue, fmt, output, **options) -> None:
        try:
            bounds = {
                name: _moment(value) if value else None
                for name, value in (("since", since), ("until", until))
            }
        except ValueError as exc:
            raise CommandError(
                f"Not a date or date-time: {exc}. Use e.g. 2026-11-01 or 2026-11-01T08:00:00Z."
            ) from None
        if bounds["since"] and bounds["until"] and bounds["since"] >= bounds["until"]:
            raise CommandError("--since must be earlier than --until.")
        if queue and not Queue.objects.filter(slug=queue).exists():
            raise CommandError(f"No queue with slug {queue!r}.")
        lines = export_lines(decisions_between(queue=queue, **bounds), fmt=fmt)
        if output is None:
            for line in lines:
                self.stdout.write(line, ending="")
            return
        count = 0
        with open(output, "w", encoding="utf-8", newline="") as out:
            for line in lines:
                out.write(line)
                count += 1
        rows = count - 1 if fmt == "csv" else count
        self.stderr.write(f"Exported {rows} decisions to {output}.")
