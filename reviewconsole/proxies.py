"""The client's address, as far as the proxies in front of the app can be trusted to say."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    """Return the address login throttling counts failures against.

    With TRUSTED_PROXY_COUNT = n > 0, the n-th address from the right of X-Forwarded-For: each
    trusted proxy appends the address it was connected from, so everything further left was
    written by the client and may be forged. Without proxies (n = 0), the socket's address.
    """
    count = settings.TRUSTED_PROXY_COUNT
    if count > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        hops = [h for h in hops if h]
        if len(hops) >= count:
            return hops[-count]
    return request.META.get("REMOTE_ADDR")
