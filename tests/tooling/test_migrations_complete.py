"""Every change to the models has its migration: a model edited without one fails here."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_need_no_migration_that_is_not_written():
    out = StringIO()
    try:
        call_command("makemigrations", check=True, dry_run=True, stdout=out, verbosity=1)
    except SystemExit:
        pytest.fail(f"models and migrations disagree; run makemigrations:\n{out.getvalue()}")
