"""The deadline index covers items awaiting their check: they are open work until confirmed
(migration 0021), so the breach and at-risk counts read them from one partial index,
item_open_work_due, which replaces item_open_due.

Built CONCURRENTLY (hence not atomic): the items table is the busiest in the schema, and a plain
CREATE INDEX would block every claim and decision while it reads the table. The new index is
built before the old one is dropped, so the counts always have one to read; if the build fails
or is cancelled, the old index is still there and the migration can simply be run again (an
invalid leftover of the failed build is dropped first).
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

# A build that failed half-way leaves an INVALID index under the new name; drop it (a no-op on
# the first attempt) so that the build below can start again.
DROP_INVALID_LEFTOVER = """
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid
              WHERE c.relname = 'item_open_work_due' AND NOT x.indisvalid) THEN
    DROP INDEX item_open_work_due;
  END IF;
END $$
"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("queue_app", "0021_deadline_until_check")]

    operations = [
        migrations.RunSQL(DROP_INVALID_LEFTOVER, migrations.RunSQL.noop),
        AddIndexConcurrently(
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
        RemoveIndexConcurrently(model_name="reviewitem", name="item_open_due"),
    ]
