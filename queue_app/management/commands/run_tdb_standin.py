"""Serve a stand-in Transparency Database on this machine, for the demo and manual trials."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.transparency.standin import StandIn


class Command(BaseCommand):
    help = (
        "Answer the Transparency Database API (POST /api/v1/statement(s), GET "
        "/api/v1/statement/existing-puid/<puid>) from memory, validating every field as the "
        "Commission's service does. Callers must send the token held in --token-env."
    )

    # It touches no database and no model: nothing for the system checks to find.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8765, help="Port to listen on (0: any).")
        parser.add_argument("--host", default="127.0.0.1", help="Address to listen on.")
        parser.add_argument(
            "--token-env",
            default="REVIEW_TDB_TOKEN",
            help="Environment variable holding the token callers must present as Bearer.",
        )
        parser.add_argument(
            "--platform-name", default="Review Console stand-in", help="Named in stored statements."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        token = os.environ.get(options["token_env"], "")
        if not token:
            raise CommandError(f"set {options['token_env']} to the token callers must present")
        try:
            standin = StandIn(
                token=token,
                host=options["host"],
                port=options["port"],
                platform_name=options["platform_name"],
                log=lambda line: self.stderr.write(line),
            )
        except OSError as exc:
            raise CommandError(
                f"cannot listen on {options['host']}:{options['port']}: {exc}"
            ) from None
        # SIGTERM (make stop, a supervisor) ends serve_forever from another thread, as it must.
        signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=standin.shutdown).start())
        self.stdout.write(
            f"Transparency Database stand-in at {standin.base_url} "
            f"(token from ${options['token_env']}); Ctrl-C to stop"
        )
        self.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            standin.serve_forever()
