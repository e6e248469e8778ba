"""The items of every chain a principal has a part in, for counting the lanes they may work.

queue_app_part_items(principal) returns the items of the decisions made, and of the lane tasks
held or once held, by the principal or by a service user of an API client they created: the
rows queue_app_chain_roles reads, in any round. queue_app_lane_barred bars nobody from a task of
any other item beyond its stored principals, so the console home's counts (LANES_FOR_USER) call
it only on tasks of these items, joined by hash, not once per open task.

Each user's rows are read by a statement planned for that user (EXECUTE): a lane whose
decisions mostly come from one maker would otherwise plan every viewer's read as that maker's,
a scan of the whole table. ROWS 100: the caller hashes these items, never the lane's tasks.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION queue_app_part_items(p_principal bigint) RETURNS SETOF bigint
LANGUAGE plpgsql STABLE ROWS 100 AS $$
DECLARE
  acting bigint;
BEGIN
  FOR acting IN SELECT p_principal
                UNION ALL
                SELECT c.user_id FROM queue_app_apiclient AS c WHERE c.created_by_id = p_principal
  LOOP
    RETURN QUERY EXECUTE
      'SELECT item_id::bigint FROM queue_app_decision WHERE reviewer_id = $1
       UNION ALL
       SELECT item_id::bigint FROM queue_app_lanetask WHERE lease_owner_id = $1'
      USING acting;
  END LOOP;
END;
$$;
"""

BACKWARD = """
DROP FUNCTION IF EXISTS queue_app_part_items(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0031_overturn_after_return")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
