"""Single sign-on with an OpenID Connect provider (mozilla-django-oidc), configured from the
environment (reviewconsole/settings.py, "identity").

What this adds to the library: accounts linked by the provider's stable subject (issuer and
`sub`, queue_app.models.SignOnLink), never by e-mail address; the provider's endpoints from its
discovery document; the mapping of a groups claim to Django groups (re-applied at every
sign-in, so a change at the provider reaches queue access at the next sign-in); and the
provider's `amr` claim kept in the session for the second-factor gate (OIDC_TRUST_AMR). State,
nonce and PKCE are the library's.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

import pghistory
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import Group, User
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, resolve_url
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
    OIDCLogoutView,
)

from queue_app.identity.backends import signed_in_user
from queue_app.models import SignOnLink

logger = logging.getLogger("queue_app")

#: Setting -> the discovery document's key for it.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}
#: `amr` values (RFC 8176) that mean the provider checked a second factor.
SECOND_FACTOR_AMR = frozenset({"mfa", "otp", "hwk", "swk", "sms", "fpt", "face", "iris", "retina"})
AMR_SESSION_KEY = "oidc_amr"
#: The access history's author of what a sign-in changes (services.access_history.SIGN_ON).
SIGN_ON_CONTEXT = "single sign-on"


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read."""


def enabled() -> bool:
    """Whether single sign-on is configured (OIDC_ISSUER set)."""
    return bool(getattr(settings, "OIDC_ENABLED", False))


@cache
def _discovery(issuer: str) -> dict[str, Any]:
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"could not read {url}: {exc}") from exc
    if document.get("issuer", "").rstrip("/") != issuer:
        raise ProviderUnavailable(f"{url} names another issuer: {document.get('issuer')!r}")
    return document


def forget_discovery() -> None:
    """Read the discovery document again on next use (tests start providers on new ports)."""
    _discovery.cache_clear()


def setting(attr: str, *default: Any) -> Any:
    """A mozilla-django-oidc setting; an endpoint left unset comes from discovery."""
    if attr in DISCOVERED and not getattr(settings, attr, ""):
        return _discovery(settings.OIDC_ISSUER).get(DISCOVERED[attr], *default or ("",))
    return import_from_settings(attr, *default)


def mapped_groups(claims: dict[str, Any]) -> set[str]:
    """The Django group names the user's provider groups map to."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    provider_groups = {value} if isinstance(value, str) else {str(v) for v in value}
    return {name for given, name in settings.OIDC_GROUP_MAP.items() if given in provider_groups}


def apply_group_mapping(user: User, claims: dict[str, Any]) -> None:
    """Make the user's mapped groups what the provider says; leave unmapped groups alone."""
    managed = set(settings.OIDC_GROUP_MAP.values())
    wanted = mapped_groups(claims)
    with transaction.atomic(), pghistory.context(via=SIGN_ON_CONTEXT, signed_in=user.pk):
        for name in wanted - set(user.groups.values_list("name", flat=True)):
            group, _ = Group.objects.get_or_create(name=name)
            user.groups.add(group)
        stale = user.groups.filter(name__in=managed - wanted)
        if stale.exists():
            user.groups.remove(*stale)


class ReviewOidcBackend(OIDCAuthenticationBackend):
    """The library's backend, with discovery, group mapping and the amr claim kept."""

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        return setting(attr, *args)

    def get_user(self, user_id: Any) -> Any:
        # The library's read (the user by id, nothing more), as a prepared statement.
        return signed_in_user(user_id)

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict) -> Any:
        self._id_claims = payload
        return super().get_or_create_user(access_token, id_token, payload)

    def _claims(self, claims: dict[str, Any]) -> dict[str, Any]:
        return {**getattr(self, "_id_claims", {}), **claims}

    def _subject(self, claims: dict[str, Any]) -> str:
        # The ID token's sub, which the library has verified; the userinfo answer must name
        # the same one (OpenID Connect Core 5.3.2) or it may describe someone else.
        subject = str(getattr(self, "_id_claims", {}).get("sub") or "")
        given = claims.get("sub")
        if not subject or (given is not None and str(given) != subject):
            raise SuspiciousOperation("The provider's answer names no subject, or two.")
        return subject

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        # The account linked to this provider's subject, never one found by e-mail address:
        # the library's default would sign a provider account that names a local
        # administrator's address in as that administrator.
        return linked_users(issuer=settings.OIDC_ISSUER, subject=self._subject(claims))

    def create_user(self, claims: dict[str, Any]) -> User:
        claims = self._claims(claims)
        subject = self._subject(claims)
        username = claims.get("preferred_username") or claims.get("email")
        if not username or User.objects.filter(username=username).exists():
            # A name taken locally stays its owner's: the provider's account gets its own.
            username = self.get_username(claims)
        try:
            with transaction.atomic():
                user = User.objects.create_user(
                    username=username,
                    email=claims.get("email", ""),
                    first_name=claims.get("given_name", ""),
                    last_name=claims.get("family_name", ""),
                )
                with pghistory.context(via=SIGN_ON_CONTEXT, signed_in=user.pk):
                    SignOnLink.objects.create(
                        issuer=settings.OIDC_ISSUER, subject=subject, user=user
                    )
        except IntegrityError:
            # The same account's first sign-in in another tab linked it first: use that one.
            user = linked_users(issuer=settings.OIDC_ISSUER, subject=subject).first()
            if user is None:
                raise
        return self._signed_in(user, claims)

    def update_user(self, user: User, claims: dict[str, Any]) -> User:
        return self._signed_in(user, self._claims(claims))

    def _signed_in(self, user: User, claims: dict[str, Any]) -> User:
        apply_group_mapping(user, claims)
        amr = claims.get("amr") or []
        self.request.session[AMR_SESSION_KEY] = [str(v) for v in amr if isinstance(v, str)]
        return user


def linked_users(*, issuer: str, subject: str) -> Any:
    """The local account (a queryset of at most one) a provider's subject is linked to."""
    return User.objects.filter(sign_on_links__issuer=issuer, sign_on_links__subject=subject)


class AlreadyLinked(Exception):
    """The provider's subject already signs in as another local account."""


def link_account(*, user: User, subject: str, issuer: str = "") -> SignOnLink:
    """Link a provider's subject to an existing local account, on purpose (an operator's act).

    Its next sign-in through the provider is then this account's. Refused if the subject is
    linked to another account already (unlink that first); linking it again is a no-op.
    """
    issuer = (issuer or settings.OIDC_ISSUER).rstrip("/")
    if not issuer or not subject:
        raise ValueError("Name the provider's issuer (OIDC_ISSUER) and the account's subject.")
    with transaction.atomic():
        link, created = SignOnLink.objects.get_or_create(
            issuer=issuer, subject=subject, defaults={"user": user}
        )
        if not created and link.user_id != user.pk:
            raise AlreadyLinked(
                f"Subject {subject!r} of {issuer} signs in as user #{link.user_id} already."
            )
    return link


def unlink_account(*, subject: str, issuer: str = "") -> int:
    """Remove a provider subject's link; its next sign-in creates a new account."""
    issuer = (issuer or settings.OIDC_ISSUER).rstrip("/")
    return SignOnLink.objects.filter(issuer=issuer, subject=subject).delete()[0]


def provider_second_factor(request: HttpRequest) -> bool:
    """Whether this session's sign-in proved a second factor at the provider (trusted or not)."""
    return bool(SECOND_FACTOR_AMR & set(request.session.get(AMR_SESSION_KEY, [])))


def provider_logout_url(request: HttpRequest) -> str:
    """OIDC_OP_LOGOUT_URL_METHOD: end the provider's session too when it offers the endpoint."""
    from django.urls import reverse
    from django.utils.http import urlencode

    back = request.build_absolute_uri(reverse(settings.LOGOUT_REDIRECT_URL))
    try:
        end_session = setting("OIDC_OP_LOGOUT_ENDPOINT")
    except ProviderUnavailable:
        end_session = ""
    if not end_session:
        return back
    params = {"post_logout_redirect_uri": back, "client_id": settings.OIDC_RP_CLIENT_ID}
    if id_token := request.session.get("oidc_id_token"):
        params["id_token_hint"] = id_token
    return f"{end_session}?{urlencode(params)}"


class _OnlyWhenEnabled:
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
        except ProviderUnavailable:
            logger.warning("identity provider unavailable", exc_info=True)
            messages.error(request, "The identity provider cannot be reached; try again shortly.")
            return redirect("login")

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        return setting(attr, *args)


class SignOnStart(_OnlyWhenEnabled, OIDCAuthenticationRequestView):
    """Send the browser to the provider (state, nonce and PKCE challenge in the session)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if enabled():
            super().__init__(*args, **kwargs)


class SignOnCallback(_OnlyWhenEnabled, OIDCAuthenticationCallbackView):
    """The provider's answer: sign in, or say why not."""

    @property
    def failure_url(self) -> str:
        return resolve_url(settings.LOGIN_REDIRECT_URL_FAILURE)

    def login_failure(self) -> HttpResponse:
        messages.error(
            self.request,
            "Single sign-on did not let you in: the provider refused, or your account here is "
            "disabled.",
        )
        return super().login_failure()


class SignOnLogout(_OnlyWhenEnabled, OIDCLogoutView):
    """Sign out here and at the provider."""
