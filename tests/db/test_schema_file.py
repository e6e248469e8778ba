"""queue_app/db/schema.sql says what the migrated test database defines, word for word.

The file is rendered from the database the migrations built (queue_app/db/schema.py); a new
migration that changes a function, trigger, constraint or view without `make schema` fails
here with the lines that differ.
"""

from __future__ import annotations

import difflib

import pytest
from django.db import connection

from queue_app.db import schema

# Enough lines to show where the drift is, few enough to read in a test report.
MAX_DIFF_LINES = 40


@pytest.mark.django_db
def test_schema_file_matches_the_migrated_database() -> None:
    committed = schema.SCHEMA_FILE.read_text()
    rendered = schema.render(connection)
    if rendered == committed:
        return
    diff = list(
        difflib.unified_diff(
            committed.splitlines(),
            rendered.splitlines(),
            "queue_app/db/schema.sql (committed)",
            "the migrated database",
            n=2,
            lineterm="",
        )
    )
    shown = "\n".join(diff[:MAX_DIFF_LINES])
    hidden = len(diff) - MAX_DIFF_LINES
    more = f"\n... {hidden} more diff lines" if hidden > 0 else ""
    pytest.fail(
        f"queue_app/db/schema.sql is not what the migrations build; run `make schema` and "
        f"commit it.\n{shown}{more}",
        pytrace=False,
    )
