"""WSGI entry point for gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
application = get_wsgi_application()

# Last: what the worker loaded above is frozen out of the cycle collector's scans.
from reviewconsole import gc_tuning  # noqa: E402

gc_tuning.tune()
