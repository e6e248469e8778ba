"""An item's evidence is a JSON object, whoever writes it.

Intake (the API, the admin, the console) only ever stores an object, but a bulk load or a
repair script writing SQL could store an array, a string or a number, and every reader (the
evidence view, the API's item schema, the evidence rules) is written for an object. The check
makes the database refuse such a row with a named constraint instead of serving it.

NOT VALID: rows written before this migration are not re-read (a deployment must not fail
here on old data); new inserts and every update of the payload are checked. The API renders an
old non-object payload as it is (api/schemas.py StoredPayload) rather than failing.
"""

from django.db import migrations

ADD = """
ALTER TABLE queue_app_reviewitem
    ADD CONSTRAINT item_payload_is_object CHECK (jsonb_typeof(payload) = 'object') NOT VALID;
"""
DROP = "ALTER TABLE queue_app_reviewitem DROP CONSTRAINT item_payload_is_object;"


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0015_handoff")]

    operations = [migrations.RunSQL(ADD, DROP)]
