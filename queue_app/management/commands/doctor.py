"""Check the known failure modes by name; exit non-zero if any fails (for cron and monitors)."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from queue_app.ops.doctor_checks import Thresholds, run_checks


class Command(BaseCommand):
    help = (
        "Run the named health checks (DOUBLE_LEASE, LEASE_LEAK, STARVATION, LOCK_CONTENTION, "
        "UNAPPLIED, BLOAT). Exit status 1 if any fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON document.")
        parser.add_argument(
            "--starvation-minutes", type=float, default=60, help="Oldest pending age that fails."
        )
        parser.add_argument(
            "--long-transaction-seconds",
            type=float,
            default=60,
            help="Open transaction age on the queue tables that fails.",
        )
        parser.add_argument(
            "--lock-wait-seconds", type=float, default=5, help="Lock wait that fails."
        )
        parser.add_argument(
            "--unapplied-minutes",
            type=float,
            default=None,
            help="Unapplied decision age that fails (default: UNAPPLIED_ALERT_MINUTES).",
        )
        parser.add_argument(
            "--lane-minutes",
            type=float,
            default=240,
            help="Age of a lane's oldest check, QA review or adjudication that fails.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        unapplied = options["unapplied_minutes"]
        thresholds = Thresholds(
            starvation=timedelta(minutes=options["starvation_minutes"]),
            long_transaction=timedelta(seconds=options["long_transaction_seconds"]),
            lock_wait=timedelta(seconds=options["lock_wait_seconds"]),
            unapplied=None if unapplied is None else timedelta(minutes=unapplied),
            lane_age=timedelta(minutes=options["lane_minutes"]),
        )
        results = run_checks(thresholds)
        failed = [r for r in results if not r.ok]
        if options["json"]:
            document = {"ok": not failed, "checks": [r.as_dict() for r in results]}
            self.stdout.write(json.dumps(document, indent=2, default=str))
        else:
            for result in results:
                status = self.style.SUCCESS("ok  ") if result.ok else self.style.ERROR("FAIL")
                self.stdout.write(f"{status} {result.name:<16} {result.summary}")
                if not result.ok and result.advice:
                    self.stdout.write(f"     {'':<16} -> {result.advice}")
            self.stdout.write(
                f"{len(failed)} of {len(results)} checks failed."
                if failed
                else f"All {len(results)} checks passed."
            )
        if failed:
            # A non-zero status is the contract with cron and monitors.
            sys.exit(1)
