"""Settings for the type checker: the production settings, with no database started.

django-stubs' mypy plugin imports the settings and sets Django up to learn the models. With
DATABASE_URL unset the production settings start the embedded PostgreSQL, which a type check
must not do: a URL that is only parsed, never connected to, stands in for it.
"""

from __future__ import annotations

import os

# Set even when the shell has one (an empty one would start the embedded server): parsed by
# django-environ into DATABASES, never connected to while mypy runs.
os.environ["DATABASE_URL"] = "postgres://typecheck@localhost/reviewconsole"
# The production settings refuse to start without a key when DEBUG is off.
os.environ.setdefault("SECRET_KEY", "type-checker-only-key-never-used-to-sign-anything-0123456789")

from reviewconsole.settings import *  # noqa: F403
