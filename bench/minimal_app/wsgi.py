from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.minimal_app.settings")
application = get_wsgi_application()

# The same collector settings as the app's workers (reviewconsole/wsgi.py): B8 compares the
# apps' requests, not the interpreter's settings.
from reviewconsole import gc_tuning  # noqa: E402

gc_tuning.tune()
