"""Provision an API client without the admin (deployment scripts); print its token once."""

from __future__ import annotations

from typing import Any

import pghistory
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.api.auth import issue_api_client, service_username, service_username_taken
from queue_app.models import ApiClient, ApiScope, Queue

NAME_MAX = ApiClient._meta.get_field("name").max_length or 200


class Command(BaseCommand):
    help = (
        "Create an API client (its own service user, its scopes and queues) and print its "
        "bearer token on stdout, once: only a hash is stored. The creation is recorded in the "
        "access history like any other access change."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The client's name (unique), e.g. the calling system.")
        parser.add_argument(
            "--scope",
            action="append",
            default=[],
            choices=[scope.value for scope in ApiScope],
            help="A scope to grant (repeat for both): intake, adjudicate.",
        )
        parser.add_argument(
            "--queue",
            action="append",
            default=[],
            metavar="SLUG",
            help="A queue the client may use (repeat for more).",
        )
        parser.add_argument(
            "--created-by",
            default="",
            metavar="USERNAME",
            help=(
                "The person who will hold the token: recorded as the client's creator (under "
                "four eyes its decisions count as theirs) and as the author in the history."
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["name"].strip()
        if not name or len(name) > NAME_MAX or "\x00" in name:
            raise CommandError(f"The name must be 1 to {NAME_MAX} characters.")
        if ApiClient.objects.filter(name=name).exists():
            raise CommandError(f"An API client named {name!r} already exists.")
        if service_username_taken(name):
            raise CommandError(
                f"A user named {service_username(name)!r} already exists; choose another name."
            )
        slugs = list(dict.fromkeys(options["queue"]))
        queues = list(Queue.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {q.slug for q in queues})
        if missing:
            raise CommandError(f"No queue is named {', '.join(missing)}.")
        creator = None
        if options["created_by"]:
            User = get_user_model()
            try:
                creator = User.objects.get(username=options["created_by"])
            except User.DoesNotExist:
                raise CommandError(f"No user is named {options['created_by']!r}.") from None
        scopes = set(options["scope"])
        context = {"command": "create_api_client", "user": creator.pk if creator else None}
        with pghistory.context(**context):
            client, token = issue_api_client(
                name=name,
                can_intake=ApiScope.INTAKE in scopes,
                can_adjudicate=ApiScope.ADJUDICATE in scopes,
                queues=queues,
                created_by=creator,
            )
        granted = ", ".join(sorted(scopes)) or "no scope"
        where = ", ".join(q.slug for q in queues) or "no queue"
        self.stderr.write(
            f"Created API client {client.name!r} ({granted}; {where}). Its token follows, shown "
            "only this once: store it in the client's secret store."
        )
        self.stdout.write(token)
