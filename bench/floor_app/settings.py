"""B8's framework floor: Review Console's own settings, with the cycle's URLs served empty.

Everything a request to Review Console passes through before and after its view (the same
middleware, the database session, the user, CSRF, the second-factor and access-history
middleware, django-axes, CSP headers) and nothing the view does (bench/floor_app/views.py).
"""

from __future__ import annotations

from reviewconsole.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor_app.urls"
