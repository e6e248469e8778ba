"""The provider's claims: email, username, the user's groups and, for users in "mfa-users", an
amr saying a second factor was checked."""

from __future__ import annotations

import contextvars
from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsValidator(OAuth2Validator):
    oidc_claim_scope = None  # every claim below goes in the ID token and userinfo

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        user = request.user
        groups = sorted(user.groups.values_list("name", flat=True))
        return {
            "email": user.email,
            "preferred_username": user.username,
            "given_name": user.first_name,
            "groups": groups,
            "amr": ["pwd", "mfa"] if "mfa-users" in groups else ["pwd"],
        }

    # Silent re-authentication (prompt=none), which django-oauth-toolkit leaves to the site: a
    # signed-in, active user passes; anyone else gets login_required, as at a real provider.
    def validate_silent_login(self, request: Any) -> bool:
        current = _request.get(None)
        return bool(current is not None and current.user.is_authenticated)

    def validate_silent_authorization(self, request: Any) -> bool:
        return True


_request: contextvars.ContextVar[Any] = contextvars.ContextVar("provider_request")


def remember_request(get_response: Any) -> Any:
    """Middleware: make the Django request (its session's user) visible to the validator."""

    def middleware(request: Any) -> Any:
        token = _request.set(request)
        try:
            return get_response(request)
        finally:
            _request.reset(token)

    return middleware
