"""The indexes of the deadline that runs until the check (migration 0021), built CONCURRENTLY.

- item_open_work_due replaces item_open_due: the breach and at-risk counts read items awaiting
  their check too, from one partial index.
- lanetask_open_due_claim replaces lanetask_open_claim: Next check walks open tasks by deadline
  (none last), then age.

Not atomic: the items and lane tables are written by every claim and decision, and a plain
CREATE INDEX would block them while it reads the table. Each new index is built before its old
one is dropped, so the statements always have one to walk; if a build fails or is cancelled,
the old index is still there and the migration can be run again: an invalid leftover of the
failed build is dropped first, and an index a run before it finished is not built again.
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


def _exists(schema_editor, name: str) -> bool:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


class AddIndexConcurrentlyIfMissing(AddIndexConcurrently):
    """AddIndexConcurrently that leaves a valid index of that name alone.

    The migration records nothing until its last step, so a run that failed at the second
    build is run again from the first, whose index is already there. (Invalid ones are gone
    by then: DROP_INVALID_LEFTOVERS.) Django's concurrent build has no IF NOT EXISTS.
    """

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if not _exists(schema_editor, self.index.name):
            super().database_forwards(app_label, schema_editor, from_state, to_state)


class RemoveIndexConcurrentlyRestorable(RemoveIndexConcurrently):
    """RemoveIndexConcurrently whose reverse (building the old index again) can be re-run the
    same way."""

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if not _exists(schema_editor, self.name):
            super().database_backwards(app_label, schema_editor, from_state, to_state)


# A build that failed half-way leaves an INVALID index under its name; drop it (a no-op on the
# first attempt) so that the builds can start again. Forwards builds the new names, backwards
# the old ones: it runs first in either direction.
DROP_INVALID_LEFTOVERS = """
DO $$
DECLARE leftover text;
BEGIN
  FOR leftover IN SELECT c.relname FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid
                   WHERE c.relname IN ('item_open_work_due', 'lanetask_open_due_claim',
                                       'item_open_due', 'lanetask_open_claim')
                     AND NOT x.indisvalid LOOP
    EXECUTE format('DROP INDEX %I', leftover);
  END LOOP;
END $$
"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("queue_app", "0021_deadline_until_check")]

    operations = [
        migrations.RunSQL(DROP_INVALID_LEFTOVERS, migrations.RunSQL.noop),
        AddIndexConcurrentlyIfMissing(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(
                    ("due_at__isnull", False),
                    ("state__in", ["pending", "leased", "held", "awaiting_check"]),
                ),
                fields=["queue", "due_at"],
                name="item_open_work_due",
            ),
        ),
        RemoveIndexConcurrentlyRestorable(model_name="reviewitem", name="item_open_due"),
        AddIndexConcurrentlyIfMissing(
            model_name="lanetask",
            index=models.Index(
                condition=models.Q(("state", "open")),
                fields=["queue", "kind", "due_at", "created_at", "id"],
                name="lanetask_open_due_claim",
            ),
        ),
        RemoveIndexConcurrentlyRestorable(model_name="lanetask", name="lanetask_open_claim"),
        migrations.RunSQL(migrations.RunSQL.noop, DROP_INVALID_LEFTOVERS),
    ]
