"""Migration 0022 is not atomic: a run that fails at any build can simply be run again.

It records nothing until its last step, so a run cancelled at the second index build is
repeated from the first, whose index is already built and whose old index is already gone.
These tests put the database in that state for real (an index build that fails leaves an
INVALID index behind, as a cancelled CREATE INDEX CONCURRENTLY does) and run the migration's
operations again, with the schema editor Django's migrate uses.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, connection
from django.db.migrations.loader import MigrationLoader

from tests.conftest import make_queue

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("queue_app", "0021_deadline_until_check")
THIS = ("queue_app", "0022_deadline_indexes")
NEW = ("item_open_work_due", "lanetask_open_due_claim")
OLD = ("item_open_due", "lanetask_open_claim")


def indexes() -> dict[str, bool]:
    """{name: valid} of the four indexes 0022 swaps, as the catalogue has them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, x.indisvalid FROM pg_index AS x"
            " JOIN pg_class AS c ON c.oid = x.indexrelid WHERE c.relname = ANY(%s)",
            [list(NEW + OLD)],
        )
        return dict(cursor.fetchall())


def run_0022(*, backwards: bool = False) -> None:
    loader = MigrationLoader(connection)
    migration = loader.get_migration(*THIS)
    before = loader.project_state(BEFORE)  # either way: the state before 0022 (Migration.apply)
    with connection.schema_editor(atomic=False) as editor:
        (migration.unapply if backwards else migration.apply)(before, editor)


def failed_build(name: str) -> None:
    """Leave an INVALID index called name, as a build that failed half-way does: a unique
    index over two rows with the same key fails after its catalogue entry is committed."""
    make_queue("first")
    make_queue("second")
    with connection.cursor() as cursor, pytest.raises(IntegrityError) as failed:
        cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {name} ON queue_app_queue ((true))")
    assert isinstance(failed.value.__cause__, psycopg.errors.UniqueViolation)
    assert indexes()[name] is False


@pytest.fixture
def restored():
    """Whatever a test does to the indexes, the suite gets 0022's end state back."""
    yield
    if indexes() != dict.fromkeys(NEW, True):
        run_0022()


def test_a_run_that_failed_at_the_second_build_can_be_run_again(restored):
    # The first build and drop succeeded; the second build failed, the old index is still there.
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX lanetask_open_due_claim")
        cursor.execute(
            "CREATE INDEX lanetask_open_claim ON queue_app_lanetask"
            " (queue_id, kind, created_at, id) WHERE state = 'open'"
        )
    failed_build("lanetask_open_due_claim")
    assert indexes() == {
        "item_open_work_due": True,
        "lanetask_open_claim": True,
        "lanetask_open_due_claim": False,
    }

    run_0022()

    assert indexes() == dict.fromkeys(NEW, True)


def test_a_run_that_failed_at_the_first_build_can_be_run_again(restored):
    run_0022(backwards=True)
    assert indexes() == dict.fromkeys(OLD, True)
    failed_build("item_open_work_due")

    run_0022()

    assert indexes() == dict.fromkeys(NEW, True)


def test_going_back_can_be_run_again_after_it_failed(restored):
    # Backwards builds the old indexes first; say the items' old index failed half-way.
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE INDEX lanetask_open_claim ON queue_app_lanetask"
            " (queue_id, kind, created_at, id) WHERE state = 'open'"
        )
        cursor.execute("DROP INDEX lanetask_open_due_claim")
    failed_build("item_open_due")

    run_0022(backwards=True)

    assert indexes() == dict.fromkeys(OLD, True)
    run_0022()
    assert indexes() == dict.fromkeys(NEW, True)
