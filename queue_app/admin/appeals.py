"""Appeals (DSA Article 20), read-only: the complaint, the decision and statement it answers,
its outcome, and its outcome notice, whose dead ones an operator retries here.

An appeal is decided in its queue's appeals lane (the console), never here: the admin shows
what was received and what became of it, as the lane page and GET /api/v1/appeals/<id> do.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest

from queue_app.admin.base import ReadOnlyAdmin
from queue_app.admin.pagination import CappedCountAdmin
from queue_app.models import Appeal, AppealNotice, DecisionStatus, LaneOutcome, LaneResult
from queue_app.services import retry_appeal_notices

#: An appeal's state in words, as the lane page and the API say it.
STATE_WORDS = {
    None: "pending",
    LaneResult.UPHELD: "upheld",
    LaneResult.OVERTURNED: "reversed",
    LaneResult.CLOSED: "closed",
}
REVERSAL_RETURNED = "reversal returned by its checker"
# An appeal reversed whose overturn its checker returned: the decision appealed still stands.
RETURNED = Q(task__outcome__overturn__story__status=DecisionStatus.RETURNED)


def appeal_state(appeal: Appeal) -> str:
    """Pending, upheld, reversed, closed; or a reversal whose overturn its checker returned
    (the decision appealed stands, and the outcome notice is held: it is not final)."""
    outcome = getattr(appeal.task, "outcome", None)
    if outcome is None:
        return STATE_WORDS[None]
    if outcome.overturn_id is not None and _returned(outcome):
        return REVERSAL_RETURNED
    return STATE_WORDS[LaneResult(outcome.result)]


def _returned(outcome: LaneOutcome) -> bool:
    story = getattr(outcome.overturn, "story", None)
    return story is not None and story.status == DecisionStatus.RETURNED


class AppealStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("pending", "Pending"),
            ("upheld", "Upheld"),
            ("reversed", "Reversed"),
            ("closed", "Closed"),
            ("reversal_returned", "Reversal returned by its checker"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Appeal]) -> QuerySet[Appeal]:
        value = self.value()
        if value == "pending":
            return queryset.filter(task__outcome__isnull=True)
        if value == "upheld":
            return queryset.filter(task__outcome__result=LaneResult.UPHELD)
        if value == "closed":
            return queryset.filter(task__outcome__result=LaneResult.CLOSED)
        if value == "reversed":
            return queryset.filter(task__outcome__result=LaneResult.OVERTURNED).exclude(RETURNED)
        if value == "reversal_returned":
            return queryset.filter(RETURNED)
        return queryset


class NoticeStatusFilter(admin.SimpleListFilter):
    title = "outcome notice"
    parameter_name = "notice"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("dead", "Dead"), ("waiting", "Waiting"), ("done", "Done"), ("none", "None yet")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Appeal]) -> QuerySet[Appeal]:
        notices = AppealNotice.objects.filter(appeal_id=OuterRef("pk"))
        value = self.value()
        if value == "dead":
            return queryset.filter(Exists(notices.filter(dead=True, done_at__isnull=True)))
        if value == "waiting":
            return queryset.filter(Exists(notices.filter(dead=False, done_at__isnull=True)))
        if value == "done":
            return queryset.filter(Exists(notices.filter(done_at__isnull=False)))
        if value == "none":
            return queryset.exclude(Exists(notices))
        return queryset


@admin.register(Appeal)
class AppealAdmin(CappedCountAdmin, ReadOnlyAdmin):
    """Appeals as received and decided; the dead outcome notices, with why, to retry."""

    list_display = ("id", "queue", "reference", "state", "received_at", "due_at", "notice_status")
    list_select_related = (
        "queue",
        "task__outcome__overturn__story",
        "notice",
    )
    list_filter = (AppealStateFilter, NoticeStatusFilter, "queue")
    search_fields = ("reference",)
    ordering = ("-received_at", "-id")
    show_full_result_count = False
    actions = ("retry_notice",)
    fieldsets = (
        (
            "The complaint",
            {
                "fields": (
                    "queue",
                    "item",
                    "client",
                    "reference",
                    "text",
                    "attachments",
                    "received_at",
                    "window_ends_at",
                    "due_at",
                )
            },
        ),
        ("What it answers", {"fields": ("decision", "statement")}),
        (
            "Outcome",
            {
                "fields": (
                    "task",
                    "state",
                    "decided_at",
                    "decided_by",
                    "reasons",
                    "overturn",
                    "corrected_verdict",
                )
            },
        ),
        (
            "Outcome notice",
            {"fields": ("notice_status", "notice_attempts", "notice_error", "notice_done_at")},
        ),
    )
    # Every field shown is read-only: an appeal is as received, its outcome as decided.
    readonly_fields = tuple(flatten_fieldsets(fieldsets))

    @staticmethod
    def _outcome(appeal: Appeal) -> LaneOutcome | None:
        return getattr(appeal.task, "outcome", None)

    @staticmethod
    def _notice(appeal: Appeal) -> AppealNotice | None:
        return getattr(appeal, "notice", None)

    @admin.display(description="state")
    def state(self, appeal: Appeal) -> str:
        return appeal_state(appeal)

    @admin.display(description="decided at")
    def decided_at(self, appeal: Appeal) -> Any:
        outcome = self._outcome(appeal)
        return outcome.created_at if outcome else "—"

    @admin.display(description="decided by")
    def decided_by(self, appeal: Appeal) -> str:
        outcome = self._outcome(appeal)
        return outcome.actor_username if outcome else "—"

    @admin.display(description="reasons")
    def reasons(self, appeal: Appeal) -> str:
        outcome = self._outcome(appeal)
        return outcome.note if outcome else "—"

    @admin.display(description="overturn")
    def overturn(self, appeal: Appeal) -> str:
        outcome = self._outcome(appeal)
        if outcome is None or outcome.overturn_id is None:
            return "—"
        if _returned(outcome):
            return f"Decision #{outcome.overturn_id}, returned by its checker: not in force"
        return f"Decision #{outcome.overturn_id}"

    @admin.display(description="corrected verdict")
    def corrected_verdict(self, appeal: Appeal) -> str:
        outcome = self._outcome(appeal)
        return (outcome.verdict if outcome else "") or "—"

    @admin.display(description="outcome notice")
    def notice_status(self, appeal: Appeal) -> str:
        notice = self._notice(appeal)
        if notice is None:
            return "none yet"
        outcome = self._outcome(appeal)
        if notice.status == "waiting" and outcome is not None and _returned(outcome):
            return "held: the reversal was returned"
        return notice.status.upper() if notice.status == "dead" else notice.status

    @admin.display(description="attempts")
    def notice_attempts(self, appeal: Appeal) -> Any:
        notice = self._notice(appeal)
        return notice.attempts if notice else "—"

    @admin.display(description="last error")
    def notice_error(self, appeal: Appeal) -> str:
        notice = self._notice(appeal)
        return (notice.last_error if notice else "") or "—"

    @admin.display(description="notice sent at")
    def notice_done_at(self, appeal: Appeal) -> Any:
        notice = self._notice(appeal)
        return notice.done_at if notice and notice.done_at else "—"

    def has_retry_notice_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("queue_app.change_appealnotice")

    @admin.action(description="Retry the dead outcome notices", permissions=["retry_notice"])
    def retry_notice(self, request: HttpRequest, queryset: QuerySet[Appeal]) -> None:
        revived = retry_appeal_notices(
            appeal_ids=queryset.values_list("pk", flat=True), operator=request.user
        )
        skipped = queryset.count() - revived
        note = f" {skipped} had no dead notice and were left alone." if skipped else ""
        self.message_user(request, f"Put {revived} dead outcome notice(s) back in line.{note}")
