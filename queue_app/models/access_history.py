"""Who was given access, and how queues were configured: append-only history kept by triggers.

django-pghistory installs a trigger on each tracked table that copies the row (before or after
the change) into an event table of its own, in the same transaction as the change. Because the
database writes the record, an access change made in a SQL shell, a migration or another
service is recorded as surely as one made in the admin; only its author differs: the
application attaches who and which request (``pghistory.context``, set by
``queue_app.identity.middleware.AccessHistoryMiddleware``), and a change with no context was
made "outside the application" (the history shows "database").

Every event table is append-only, as the decision log is: a row trigger refuses UPDATE and
DELETE (``append_only=True``) and a statement trigger refuses TRUNCATE (``NO_TRUNCATE``). The
context is stored in the event row itself (PGHISTORY_CONTEXT_FIELD is a JSON field), so no later
write to a shared context table can rewrite what a record says.

Tables of other apps (auth, django-otp) and many-to-many link tables are tracked through proxy
models, so the triggers and their migrations live in this app.
"""

from __future__ import annotations

from typing import Any

import pghistory
import pgtrigger
from django.contrib.auth.models import Group, User
from django.db import models
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from queue_app.models.lane_tasks import CheckPolicy
from queue_app.models.review import (
    ApiClient,
    AutomationSwitch,
    HoldReason,
    Queue,
    ReasonCode,
    SignOnLink,
)
from queue_app.models.statements import ReasonMapping, StatementPolicy

APP = "queue_app"

#: The user flags that grant access; last_login and the password hash are not history.
USER_FIELDS = ["username", "is_active", "is_staff", "is_superuser"]
#: Queue settings that change what a reviewer's decision does or who gets the work.
QUEUE_FIELDS = [
    "slug",
    "name",
    "lease_ttl",
    "escalation_threshold",
    "escalation_queue",
    "effect",
    "webhook_url",
    "webhook_secret_env",
    "max_in_flight",
    "release_skip",
    # Who may see the work (sensitive), its deadlines, how long it may wait, how much is sampled.
    "sensitive",
    "default_sla",
    "sla_warning",
    "max_hold",
    "qa_rate",
    # Machine suggestions: how they are shown, and when the machine decides (the stop switch).
    "suggestion_display",
    "auto_decide_above",
    "auto_decide_user",
    "auto_decide_qa_rate",
    "automation_stopped_at",
]
#: last_used_at changes on every API call: not an access change.
API_CLIENT_FIELDS = [
    "name",
    "user",
    "token_prefix",
    "can_intake",
    "can_adjudicate",
    "created_by",
    "revoked_at",
]
#: A TOTP device's counters (last_t, drift, throttling) move at every sign-in: not history.
DEVICE_FIELDS = ["user", "name", "confirmed"]


def _row_events(fields: list[str]) -> tuple[pghistory.RowEvent, ...]:
    """Insert, update (only when a tracked field changes) and delete events."""
    return (
        pghistory.InsertEvent("created"),
        pghistory.UpdateEvent("changed", condition=pgtrigger.AnyChange(*fields)),
        pghistory.DeleteEvent("deleted"),
    )


def _link_events() -> tuple[pghistory.RowEvent, ...]:
    return (pghistory.InsertEvent("added"), pghistory.DeleteEvent("removed"))


class UserAccess(User):
    class Meta:
        proxy = True
        app_label = APP


class UserGroupLink(User.groups.through):  # type: ignore[name-defined]  # made at run time
    class Meta:
        proxy = True
        app_label = APP


class UserPermissionLink(User.user_permissions.through):  # type: ignore[name-defined]  # made at run time
    class Meta:
        proxy = True
        app_label = APP


class GroupPermissionLink(Group.permissions.through):  # type: ignore[name-defined]  # made at run time
    class Meta:
        proxy = True
        app_label = APP


class QueueReviewerGroupLink(Queue.reviewer_groups.through):  # type: ignore[name-defined]  # made at run time
    class Meta:
        proxy = True
        app_label = APP


class ApiClientQueueLink(ApiClient.queues.through):  # type: ignore[name-defined]  # made at run time
    class Meta:
        proxy = True
        app_label = APP


class TOTPDeviceAccess(TOTPDevice):
    class Meta:
        proxy = True
        app_label = APP


class StaticDeviceAccess(StaticDevice):
    class Meta:
        proxy = True
        app_label = APP


#: pghistory's append_only refuses UPDATE and DELETE row by row; TRUNCATE fires no row trigger,
#: so without this the application's role could empty a history table in one statement.
#: The message and error code are the decision log's (queue_app_refuse_rewrite).
NO_TRUNCATE = pgtrigger.Trigger(
    name="no_truncate",
    when=pgtrigger.Before,
    operation=pgtrigger.Truncate,
    level=pgtrigger.Statement,
    func="RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP "
    "USING ERRCODE = 'restrict_violation';",
)


def _event_model(tracked, name: str, trackers, fields=None, obj: bool = True, attrs=None):
    # None: no foreign key to the tracked row (the link tables). pghistory accepts it, as
    # track()'s hint says; create_event_model's hint leaves it out.
    obj_field = pghistory.ObjForeignKey(related_name="access_events") if obj else None
    return pghistory.create_event_model(
        tracked,
        *trackers,
        fields=fields,
        attrs=attrs,
        model_name=name,
        app_label=APP,
        abstract=False,
        append_only=True,
        meta={"triggers": [NO_TRUNCATE]},
        obj_field=obj_field,  # type: ignore[arg-type]  # None is accepted (see above)
    )


UserAccessEvent = _event_model(UserAccess, "UserAccessEvent", _row_events(USER_FIELDS), USER_FIELDS)
UserGroupEvent = _event_model(UserGroupLink, "UserGroupEvent", _link_events(), obj=False)
UserPermissionEvent = _event_model(
    UserPermissionLink, "UserPermissionEvent", _link_events(), obj=False
)
GroupPermissionEvent = _event_model(
    GroupPermissionLink, "GroupPermissionEvent", _link_events(), obj=False
)
QueueReviewerGroupEvent = _event_model(
    QueueReviewerGroupLink, "QueueReviewerGroupEvent", _link_events(), obj=False
)
ApiClientEvent = _event_model(
    ApiClient, "ApiClientEvent", _row_events(API_CLIENT_FIELDS), API_CLIENT_FIELDS
)
ApiClientQueueEvent = _event_model(
    ApiClientQueueLink, "ApiClientQueueEvent", _link_events(), obj=False
)
_NOT_YET_TRACKED = "Empty on events recorded before the history began tracking it."
#: Settings tracked after the first ones: nullable in the event table, so events recorded
#: before then say "not recorded" rather than a default the queue may never have had. The
#: migration writes one "baseline" event per queue with their values at that moment.
QUEUE_FIELDS_SINCE_0018: dict[str, models.Field[Any, Any]] = {
    "sensitive": models.BooleanField(null=True, help_text=_NOT_YET_TRACKED),
    "default_sla": models.DurationField(null=True, help_text=_NOT_YET_TRACKED),
    "sla_warning": models.DurationField(null=True, help_text=_NOT_YET_TRACKED),
    "max_hold": models.DurationField(null=True, help_text=_NOT_YET_TRACKED),
    "qa_rate": models.DecimalField(
        max_digits=5, decimal_places=2, null=True, help_text=_NOT_YET_TRACKED
    ),
}
QUEUE_FIELDS_SINCE_SUGGESTIONS: dict[str, models.Field[Any, Any]] = {
    "suggestion_display": models.CharField(max_length=16, null=True, help_text=_NOT_YET_TRACKED),
    "auto_decide_above": models.DecimalField(
        max_digits=5, decimal_places=4, null=True, help_text=_NOT_YET_TRACKED
    ),
    "auto_decide_qa_rate": models.DecimalField(
        max_digits=5, decimal_places=2, null=True, help_text=_NOT_YET_TRACKED
    ),
}
QueueConfigEvent = _event_model(
    Queue,
    "QueueConfigEvent",
    _row_events(QUEUE_FIELDS),
    QUEUE_FIELDS,
    attrs={**QUEUE_FIELDS_SINCE_0018, **QUEUE_FIELDS_SINCE_SUGGESTIONS},
)
#: The stop switch for all queues' automatic decisions: who pressed it, and when.
AUTOMATION_SWITCH_FIELDS = ["stopped_at"]
AutomationSwitchEvent = _event_model(
    AutomationSwitch,
    "AutomationSwitchEvent",
    _row_events(AUTOMATION_SWITCH_FIELDS),
    AUTOMATION_SWITCH_FIELDS,
)
REASON_FIELDS = ["queue", "verdict", "code", "label", "retired_at", "is_default"]
ReasonCodeEvent = _event_model(
    ReasonCode, "ReasonCodeEvent", _row_events(REASON_FIELDS), REASON_FIELDS
)
#: Maker-checker: which of a queue's decisions need a second person before their effect runs.
CHECK_POLICY_FIELDS = ["queue", "verdict", "path", "threshold", "machine_only"]
CheckPolicyEvent = _event_model(
    CheckPolicy,
    "CheckPolicyEvent",
    _row_events(CHECK_POLICY_FIELDS),
    CHECK_POLICY_FIELDS,
    attrs={"machine_only": models.BooleanField(null=True, help_text=_NOT_YET_TRACKED)},
)
#: A queue's hold codes: why its items may be set aside, and which are still offered.
HOLD_REASON_FIELDS = ["queue", "code", "label", "retired_at"]
HoldReasonEvent = _event_model(
    HoldReason, "HoldReasonEvent", _row_events(HOLD_REASON_FIELDS), HOLD_REASON_FIELDS
)
#: Statements of reasons: whether a queue's decisions restrict someone, and how.
STATEMENT_POLICY_FIELDS = [
    "queue",
    "restricts",
    "restricting_verdict",
    "decision_visibility",
    "decision_visibility_other",
    "decision_monetary",
    "decision_monetary_other",
    "decision_provision",
    "decision_account",
    "account_type",
    "restriction_duration",
    "territorial_scope",
    "content_type",
    "content_type_other",
    "content_language",
    "source_type",
    "source_identity",
    "puid_template",
    "content_date_key",
    "appeal_window_months",
    "appeal_decide_within",
    "out_of_court_settlement",
]
StatementPolicyEvent = _event_model(
    StatementPolicy,
    "StatementPolicyEvent",
    _row_events(STATEMENT_POLICY_FIELDS),
    STATEMENT_POLICY_FIELDS,
    attrs={"appeal_decide_within": models.DurationField(null=True, help_text=_NOT_YET_TRACKED)},
)
#: A reason code's ground, category and explanation in its statements.
REASON_MAPPING_FIELDS = [
    "queue",
    "reason_code",
    "decision_ground",
    "ground",
    "incompatible_content_illegal",
    "reference_url",
    "category",
    "category_addition",
    "keywords",
    "keyword_other",
    "explanation_template",
]
ReasonMappingEvent = _event_model(
    ReasonMapping, "ReasonMappingEvent", _row_events(REASON_MAPPING_FIELDS), REASON_MAPPING_FIELDS
)
TOTPDeviceEvent = _event_model(
    TOTPDeviceAccess, "TOTPDeviceEvent", _row_events(DEVICE_FIELDS), DEVICE_FIELDS
)
StaticDeviceEvent = _event_model(
    StaticDeviceAccess, "StaticDeviceEvent", _link_events(), ["user", "name"]
)

#: Which provider account signs in as which local account: granting it is granting access.
SIGN_ON_LINK_FIELDS = ["issuer", "subject", "user"]
SignOnLinkEvent = _event_model(
    SignOnLink, "SignOnLinkEvent", _row_events(SIGN_ON_LINK_FIELDS), SIGN_ON_LINK_FIELDS
)

#: Every access event model, in the order the history lists their kinds.
EVENT_MODELS = [
    UserAccessEvent,
    UserGroupEvent,
    UserPermissionEvent,
    GroupPermissionEvent,
    QueueReviewerGroupEvent,
    ApiClientEvent,
    ApiClientQueueEvent,
    QueueConfigEvent,
    AutomationSwitchEvent,
    ReasonCodeEvent,
    CheckPolicyEvent,
    HoldReasonEvent,
    StatementPolicyEvent,
    ReasonMappingEvent,
    TOTPDeviceEvent,
    StaticDeviceEvent,
    SignOnLinkEvent,
]
