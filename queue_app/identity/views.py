"""Sign-in pages: the login page (password and/or single sign-on), second-factor enrolment and
verification."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django_otp import login as otp_login

from queue_app.identity import mfa, oidc
from queue_app.login import LoginForm

PASSWORD_OFF = "Password sign-in is switched off here; use single sign-on."


class LoginView(auth_views.LoginView):
    """Django's login, showing what is enabled; a password post is refused when switched off."""

    authentication_form = LoginForm

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.PASSWORD_LOGIN:
            return HttpResponseForbidden(PASSWORD_OFF, content_type="text/plain; charset=utf-8")
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["password_login"] = settings.PASSWORD_LOGIN
        context["sso_enabled"] = oidc.enabled()
        context["sso_name"] = settings.OIDC_PROVIDER_NAME
        return context


def _next(request: HttpRequest, default: str = "home") -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse(default)


@never_cache
@sensitive_post_parameters("code")
@login_required
def mfa_verify(request: HttpRequest) -> HttpResponse:
    """Ask for a code from the enrolled authenticator (or a recovery code)."""
    user = cast(User, request.user)  # login_required: never anonymous
    if mfa.confirmed_totp(user) is None:
        return redirect(reverse("mfa-setup") + "?" + urlencode({"next": _next(request)}))
    error = ""
    if request.method == "POST":
        try:
            verified = mfa.verify_code(user=user, code=request.POST.get("code", ""))
        except mfa.MfaError as exc:
            error = str(exc)
        else:
            otp_login(request, verified.device)
            if verified.recovery_codes_left is not None:
                messages.warning(
                    request,
                    f"Recovery code used; {verified.recovery_codes_left} left. Replace your "
                    "device soon (an administrator can reset it).",
                )
            return redirect(_next(request))
    return render(
        request,
        "registration/mfa_verify.html",
        {"title": "Second factor", "error": error, "next": _next(request)},
        status=400 if error else 200,
    )


@never_cache
@sensitive_post_parameters("code")
@login_required
def mfa_setup(request: HttpRequest) -> HttpResponse:
    """Enrol an authenticator: scan, confirm with a first code, get recovery codes once."""
    user = cast(User, request.user)  # login_required: never anonymous
    if mfa.confirmed_totp(user) is not None:
        if request.user.is_verified():  # type: ignore[union-attr]  # django-otp adds it
            messages.info(request, "Your authenticator is already set up.")
            return redirect(_next(request))
        return redirect(reverse("mfa-verify") + "?" + urlencode({"next": _next(request)}))
    device = mfa.pending_totp(user)
    error = ""
    if request.method == "POST":
        try:
            codes = mfa.enrol_totp(user=user, device=device, code=request.POST.get("code", ""))
        except mfa.MfaError as exc:
            error = str(exc)
        else:
            otp_login(request, device)
            # Rendered here, not after a redirect: the codes never pass through a cookie or the
            # session, and the page is never cached (never_cache).
            return render(
                request,
                "registration/mfa_codes.html",
                {"title": "Recovery codes", "codes": codes, "next": _next(request)},
            )
    return render(
        request,
        "registration/mfa_setup.html",
        {
            "title": "Set up a second factor",
            "qr": mfa.qr_svg(device),
            "secret": mfa.secret_text(device),
            "error": error,
            "next": _next(request),
        },
        status=400 if error else 200,
    )
