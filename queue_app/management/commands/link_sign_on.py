"""Link a provider's account to an existing local account on purpose (or remove a link)."""

from __future__ import annotations

from typing import Any

import pghistory
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from queue_app.identity.oidc import AlreadyLinked, link_account, unlink_account


class Command(BaseCommand):
    help = (
        "Make the provider's account with this subject (its `sub` claim, as the provider shows "
        "it) sign in as an existing local user. Single sign-on never links accounts by e-mail "
        "address: without a link, a provider account's first sign-in creates a new account. "
        "Recorded in the access history."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("subject", help="The provider's subject (sub) for the account.")
        parser.add_argument("username", nargs="?", default="", help="The local user to link.")
        parser.add_argument(
            "--issuer", default="", help="The provider's issuer URL (default: OIDC_ISSUER)."
        )
        parser.add_argument(
            "--unlink",
            action="store_true",
            help="Remove the subject's link instead; its next sign-in creates a new account.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        subject, issuer = options["subject"].strip(), options["issuer"].strip()
        with pghistory.context(command="link_sign_on"):
            if options["unlink"]:
                removed = unlink_account(subject=subject, issuer=issuer)
                self.stdout.write(f"Removed {removed} link(s) of subject {subject!r}.")
                return
            user = get_user_model().objects.filter(username=options["username"]).first()
            if user is None:
                raise CommandError(f"There is no user named {options['username']!r}.")
            try:
                link = link_account(user=user, subject=subject, issuer=issuer)
            except (AlreadyLinked, ValueError) as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Subject {subject!r} of {link.issuer} now signs in as {user.get_username()!r}."
        )
