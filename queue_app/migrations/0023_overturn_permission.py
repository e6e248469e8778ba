"""An overturn is written only by someone who holds can_overturn, as the database reads it.

services.overturn_decision asks user.has_perm first, to refuse in plain words; but Django caches
a user's permissions on the user object for the whole request, and a permission or group
removed between that question and the insert would not be seen. This trigger asks again in the
insert itself, as Django's ModelBackend decides it: an active user who is a superuser or holds
queue_app.can_overturn directly or through a group (the same test as sql_lanes._CAN_OVERTURN,
which gates the adjudication lane). A revocation committed before the insert's statement starts
is seen; every writer is held to it, the admin's form, adjudication and raw SQL alike.

It runs for overturn rows only (a WHEN clause), so a reviewer's decision pays nothing for it.
Its name sorts after decision_chain's, so the four-eyes refusal of one's own decision keeps its
own words. No row is read or written by the migration itself.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION queue_app_decision_overturn_permission() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (
      SELECT 1 FROM auth_user AS u
       WHERE u.id = NEW.reviewer_id AND u.is_active
         AND (u.is_superuser OR EXISTS (
             SELECT 1 FROM auth_permission AS p
               JOIN django_content_type AS ct ON ct.id = p.content_type_id
              WHERE ct.app_label = 'queue_app' AND p.codename = 'can_overturn'
                AND (EXISTS (SELECT 1 FROM auth_user_user_permissions AS up
                              WHERE up.user_id = u.id AND up.permission_id = p.id)
                     OR EXISTS (SELECT 1 FROM auth_group_permissions AS gp
                                  JOIN auth_user_groups AS ug ON ug.group_id = gp.group_id
                                 WHERE ug.user_id = u.id AND gp.permission_id = p.id))))) THEN
    RAISE EXCEPTION 'overturn permission: user % may not overturn decision %: they do not hold can_overturn',
      NEW.reviewer_id, NEW.supersedes_id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER decision_overturn_permission BEFORE INSERT ON queue_app_decision
  FOR EACH ROW WHEN (NEW.verdict = 'overturn')
  EXECUTE FUNCTION queue_app_decision_overturn_permission();
"""

BACKWARD = """
DROP TRIGGER decision_overturn_permission ON queue_app_decision;
DROP FUNCTION queue_app_decision_overturn_permission();
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0022_deadline_indexes")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
