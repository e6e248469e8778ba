"""Read the access and configuration history (recorded by triggers, models/access_history.py).

One timeline across every event table (pghistory's Events), filtered by the user a change was
about (or made by), the queue it concerns, and dates. A queue's history includes the group
memberships of every group that reviews it, or ever did: "who gave Alice access to KYC" is the
day Alice joined a KYC reviewer group, or the day her group was given the queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from django.contrib.auth.models import Group, Permission, User
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from pghistory.models import Events

from queue_app.jsonutil import stored_loads
from queue_app.models import ApiClient, Queue
from queue_app.models.access_history import EVENT_MODELS, QueueReviewerGroupEvent

DATABASE = "database"
SIGN_ON = "single sign-on"

#: Event model label -> (what it records, the object kind its subject names).
KINDS: dict[str, str] = {
    "queue_app.UserAccessEvent": "user flags",
    "queue_app.UserGroupEvent": "group membership",
    "queue_app.UserPermissionEvent": "user permission",
    "queue_app.GroupPermissionEvent": "group permission",
    "queue_app.QueueReviewerGroupEvent": "queue reviewer group",
    "queue_app.ApiClientEvent": "API client",
    "queue_app.ApiClientQueueEvent": "API client queue",
    "queue_app.QueueConfigEvent": "queue configuration",
    "queue_app.AutomationSwitchEvent": "automatic decisions, all queues",
    "queue_app.ReasonCodeEvent": "reason code",
    "queue_app.CheckPolicyEvent": "check policy",
    "queue_app.HoldReasonEvent": "hold reason",
    "queue_app.StatementPolicyEvent": "statement policy",
    "queue_app.ReasonMappingEvent": "reason's statement mapping",
    "queue_app.TOTPDeviceEvent": "authenticator (TOTP)",
    "queue_app.StaticDeviceEvent": "recovery codes",
    "queue_app.SignOnLinkEvent": "single sign-on link",
}


def history_events(
    *,
    user: User | None = None,
    actor: User | None = None,
    queue: Queue | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet:
    """Access events, newest first, filtered as asked (each filter narrows)."""
    events = Events.objects.across(*EVENT_MODELS)
    if user is not None:
        events = events.filter(
            Q(pgh_model="queue_app.UserAccessEvent", pgh_obj_id=str(user.pk))
            | Q(pgh_data__user_id=user.pk)
        )
    if actor is not None:
        events = events.filter(pgh_context__user=actor.pk)
    if queue is not None:
        events = events.filter(_about_queue(queue))
    if since is not None:
        events = events.filter(pgh_created_at__gte=since)
    if until is not None:
        events = events.filter(pgh_created_at__lt=until)
    # The snapshots as the database wrote them: a JSON number read through Django's JSONField
    # becomes a float (a threshold of 1000.00 would read 1000.0); describe() reads these.
    exact = {
        "pgh_data_text": Cast("pgh_data", TextField()),
        "pgh_diff_text": Cast("pgh_diff", TextField()),
    }
    return events.annotate(**exact).order_by("-pgh_created_at", "-pgh_id")


def _exact_json(event: Any) -> None:
    """Re-read an event's snapshot and diff with numbers as Decimal, exactly as stored."""
    for field in ("pgh_data", "pgh_diff"):
        text = getattr(event, f"{field}_text", None)
        if text is not None:
            setattr(event, field, stored_loads(text))


def _about_queue(queue: Queue) -> Q:
    groups = set(queue.reviewer_groups.values_list("pk", flat=True)) | {
        row["group_id"]
        for row in QueueReviewerGroupEvent.objects.filter(queue_id=queue.pk).values("group_id")
    }
    return (
        Q(pgh_model="queue_app.QueueConfigEvent", pgh_obj_id=str(queue.pk))
        | Q(pgh_data__queue_id=queue.pk)
        | Q(pgh_model="queue_app.UserGroupEvent", pgh_data__group_id__in=sorted(groups))
    )


@dataclass(frozen=True)
class HistoryRow:
    """One access change, in words."""

    pgh_id: int
    at: datetime
    kind: str
    action: str
    subject: str
    change: str
    by: str
    trace_id: str


class _Names:
    """Names for the ids events carry, looked up in a few queries per page."""

    def __init__(self, events: list[Any]) -> None:
        ids: dict[str, set[int]] = {k: set() for k in ("user", "group", "queue", "perm", "client")}
        for event in events:
            data = event.pgh_data or {}
            for key, kind in (
                ("user_id", "user"),
                ("group_id", "group"),
                ("queue_id", "queue"),
                ("permission_id", "perm"),
                ("apiclient_id", "client"),
                ("created_by_id", "user"),
            ):
                if isinstance(data.get(key), int):
                    ids[kind].add(data[key])
            if event.pgh_model == "queue_app.QueueConfigEvent" and event.pgh_obj_id:
                ids["queue"].add(int(event.pgh_obj_id))
            if event.pgh_model == "queue_app.ApiClientEvent" and event.pgh_obj_id:
                ids["client"].add(int(event.pgh_obj_id))
            if (context := event.pgh_context or {}).get("user"):
                ids["user"].add(context["user"])
        self.user = dict(User.objects.filter(pk__in=ids["user"]).values_list("pk", "username"))
        self.group = dict(Group.objects.filter(pk__in=ids["group"]).values_list("pk", "name"))
        self.queue = dict(Queue.objects.filter(pk__in=ids["queue"]).values_list("pk", "slug"))
        self.perm = {
            p.pk: f"{p.content_type.app_label}.{p.codename}"
            for p in Permission.objects.filter(pk__in=ids["perm"]).select_related("content_type")
        }
        self.client = dict(ApiClient.objects.filter(pk__in=ids["client"]).values_list("pk", "name"))

    def of(self, table: str, pk: Any) -> str:
        if pk is None:
            return "—"
        name = getattr(self, table).get(pk)
        return f"{name} (#{pk})" if name else f"#{pk} (deleted)"


def _subject(event: Any, names: _Names) -> str:
    data = event.pgh_data or {}
    user, group = names.of("user", data.get("user_id")), names.of("group", data.get("group_id"))
    queue = names.of("queue", data.get("queue_id"))
    perm = names.of("perm", data.get("permission_id"))
    described = {
        "queue_app.UserAccessEvent": lambda: f"user {data.get('username')} (#{event.pgh_obj_id})",
        "queue_app.UserGroupEvent": lambda: f"user {user} in group {group}",
        "queue_app.UserPermissionEvent": lambda: f"user {user}: {perm}",
        "queue_app.GroupPermissionEvent": lambda: f"group {group}: {perm}",
        "queue_app.QueueReviewerGroupEvent": lambda: f"queue {queue} reviewed by group {group}",
        "queue_app.ApiClientEvent": lambda: f"API client {data.get('name')} (#{event.pgh_obj_id})",
        "queue_app.ApiClientQueueEvent": lambda: (
            f"API client {names.of('client', data.get('apiclient_id'))} on queue {queue}"
        ),
        "queue_app.QueueConfigEvent": lambda: f"queue {data.get('slug')} (#{event.pgh_obj_id})",
        "queue_app.AutomationSwitchEvent": lambda: "stop switch for every queue",
        "queue_app.ReasonCodeEvent": lambda: (
            f"reason {data.get('verdict')}/{data.get('code')} of queue "
            f"{names.of('queue', data.get('queue_id'))}"
        ),
        "queue_app.CheckPolicyEvent": lambda: (
            f"check policy #{event.pgh_obj_id} of queue {queue}: {data.get('verdict')} "
            + (
                f"when {data.get('path')} ≥ {_plain(data.get('threshold'))}"
                if data.get("path")
                else "always"
            )
        ),
        "queue_app.HoldReasonEvent": lambda: f"hold reason {data.get('code')} of queue {queue}",
        "queue_app.StatementPolicyEvent": lambda: f"statement policy of queue {queue}",
        "queue_app.ReasonMappingEvent": lambda: (
            f"statement mapping of reason #{data.get('reason_code_id')} of queue {queue}"
        ),
        "queue_app.TOTPDeviceEvent": lambda: (
            f"{data.get('name')} of user {names.of('user', data.get('user_id'))}"
        ),
        "queue_app.StaticDeviceEvent": lambda: (
            f"{data.get('name')} of user {names.of('user', data.get('user_id'))}"
        ),
        "queue_app.SignOnLinkEvent": lambda: (
            f"provider subject {data.get('subject')} of {data.get('issuer')} as user {user}"
        ),
    }
    return described.get(event.pgh_model, lambda: str(data))()


def _change(event: Any) -> str:
    if event.pgh_label == "changed" and event.pgh_diff:
        return "; ".join(
            f"{field}: {_plain(before)} → {_plain(after)}"
            for field, (before, after) in sorted(event.pgh_diff.items())
        )
    data = {k: v for k, v in (event.pgh_data or {}).items() if k != "id"}
    # "baseline": the values a row had when the history began tracking it.
    if event.pgh_label in ("created", "deleted", "baseline"):
        return ", ".join(f"{k}={_plain(v)}" for k, v in sorted(data.items()))
    return ""


def _plain(value: Any) -> str:
    if isinstance(value, Decimal):
        return _decimal(value)
    return "—" if value is None or value == "" else str(value)


def _decimal(value: Decimal) -> str:
    """Every digit that matters, and no more trailing zeros than cents (a column's scale of 10
    would write 1000.0000000000): 1000.00, 12.50, 0.125, 3."""
    exponent = value.as_tuple().exponent
    # A letter ("n", "N", "F") for NaN and infinity: only a finite value has an int exponent.
    if not isinstance(exponent, int) or exponent >= 0:
        return str(value)
    scale = -exponent
    # A finite value stays finite normalised: its exponent is an int too.
    significant = max(-cast(int, value.normalize().as_tuple().exponent), 0)
    return f"{value:.{min(scale, max(significant, 2))}f}"


def _by(event: Any, names: _Names) -> str:
    context = event.pgh_context or {}
    if context.get("command"):
        who = names.of("user", context["user"]) if context.get("user") else None
        return f"manage.py {context['command']}" + (f" ({who})" if who else "")
    if context.get("user"):
        return names.of("user", context["user"])
    if context.get("via") == SIGN_ON:
        return f"{SIGN_ON} ({names.of('user', context.get('signed_in'))})"
    return DATABASE


def describe(events: Iterable[Any]) -> Iterator[HistoryRow]:
    """Turn events into rows a person reads (the admin page and the CSV export)."""
    events = list(events)
    for event in events:
        _exact_json(event)
    names = _Names(events)
    for event in events:
        yield HistoryRow(
            pgh_id=event.pgh_id,
            at=event.pgh_created_at,
            kind=KINDS.get(event.pgh_model, event.pgh_model),
            action=event.pgh_label,
            subject=_subject(event, names),
            change=_change(event),
            by=_by(event, names),
            trace_id=str((event.pgh_context or {}).get("trace_id") or ""),
        )
