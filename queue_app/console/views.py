"""The reviewer console: my queues, next item, the item page and its fenced writes.

Views fetch with permission, validate, call one service and redirect. Every rule (the fence,
the evidence hash, the reason code, queue access) is enforced by the services again, so a page
without JavaScript, a stale tab or a forged form gets the same answer: a message a person
understands, never a stack trace.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import OperationalError
from django.db.models import Count, Min, Q
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from queue_app.console.attachment_cards import attachment_cards
from queue_app.console.deadline_context import home_deadline_counts, item_page_extras
from queue_app.console.evidence_display import evidence_view
from queue_app.console.suggestion_display import suggestion_context
from queue_app.errors import (
    EvidenceChanged,
    InvalidBounds,
    InvalidReason,
    InvalidVerdict,
    NotPermitted,
    QueueEmpty,
    ReviewError,
    StaleLease,
    SuggestionSeenInvalid,
    WarningsNotSeen,
)
from queue_app.evidence import item_evidence_hash
from queue_app.forms import DecisionForm, LeaseForm
from queue_app.models import REVIEW_VERDICTS, ItemState, Queue, ReviewItem
from queue_app.rules import warnings_for
from queue_app.selectors.item_timeline import (
    ALL_PAGE,
    PAGE,
    item_touched_by,
    timeline_from,
    touched_by_from,
)
from queue_app.selectors.queues import queue_of_item_with_access, queue_with_access
from queue_app.services import (
    PageResults,
    TimelinePage,
    claim_next_id,
    handoff_refusal,
    item_handoff,
    item_page_rows,
    lanes_for_user,
    queues_for_user,
    read_item_page,
    release_lease,
    renew_lease,
    signed_in_id,
    submit_decision,
)
from queue_app.services.blindness import BLIND_NOTE, is_blind_to
from queue_app.services.suggestions import NOT_SHOWN, Seen, read_seen_token, seen_on_page

logger = logging.getLogger("queue_app")

NO_SUCH_ITEM = "There is no such item, or it belongs to a queue you do not have access to."
DATABASE_BUSY = "The database did not answer in time. Please try again in a moment."
ITEM_UNAVAILABLE = (
    "This item's page could not be shown. The problem has been logged for the administrators."
)
POST_ONLY = (
    "Nothing was recorded: this address only takes the buttons on the console's pages. If you "
    "were signed out while working, open the item again from My queues and submit again."
)


class Refusal(Exception):
    """Stop a view and show a plain page with a status code and words for a person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def console_view(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Require a login and turn every expected failure into words instead of a traceback."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return view(request, *args, **kwargs)
        except Refusal as refusal:
            return render(
                request,
                "console/refused.html",
                {"title": "Not available", "message": refusal.message},
                status=refusal.status,
            )
        except ReviewError as exc:
            messages.error(request, exc.message)
            return redirect("home")
        except OperationalError:
            # Lock or statement timeout (settings.REVIEW_*_TIMEOUT_MS), or a lost connection:
            # the service's transaction rolled back; say so plainly rather than show a 500.
            logger.exception("database error in console view")
            return render(
                request,
                "console/refused.html",
                {"title": "Try again", "message": DATABASE_BUSY},
                status=503,
            )

    return login_required(wrapper)


def post_only(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Serve POST only; answer anything else 405 with words, not Django's blank page."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method == "POST":
            return view(request, *args, **kwargs)
        # Reached by a GET when the login page sends someone back here after their session
        # ended mid-submit (its ?next= is this address), or by a bookmark.
        response = render(
            request, "console/refused.html", {"title": "Not available", "message": POST_ONLY}
        )
        response.status_code = 405
        response["Allow"] = "POST"
        return response

    return wrapper


def _queue_for(request: HttpRequest, slug: str) -> Queue:
    """The queue to claim from, if the user may review it (the claim asks again, in SQL)."""
    queue = queue_with_access(slug=slug, user_id=signed_in_id(request.user))
    if queue is None:
        raise Refusal(404, "There is no such queue.")
    if not queue.may_review:
        raise Refusal(403, "You do not have access to this queue. Ask an admin to add you.")
    return queue


_MAX_ID = 2**63 - 1


def _posted_id(value: str | None) -> int | None:
    """A posted row id (a bigint), or None for anything else: absent, empty, not a number."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    number = int(value)
    return number if 0 < number <= _MAX_ID else None


def _queue_of_item(request: HttpRequest, item_id: int) -> Queue:
    """The queue of an item the user may review, with _item_for's one answer otherwise.

    For the decide, whose own statement reads the item, fenced: one prepared statement for
    the queue and the access rule, without the item's row (its payload above all) to build.
    """
    user = request.user
    found = queue_of_item_with_access(item_id=item_id, user_id=user.pk) if user.is_active else None
    return _reviewable(found)


def _item_for(request: HttpRequest, item_id: int) -> ReviewItem:
    user = request.user
    # login_required let the user in; an account deactivated since sees nothing.
    item = (
        ReviewItem.objects.with_queue_and_access(item_id=item_id, user_id=user.pk)
        if user.is_active
        else None
    )
    return _reviewable(item)


def _reviewable(found: Any) -> Any:
    """An item or queue read with may_review, if the user may review it; else the 404."""
    # One answer for "missing" and "not yours": a reviewer cannot probe other queues' items.
    if found is None or not found.may_review:
        raise Refusal(404, NO_SUCH_ITEM)
    return found


# -- pages --------------------------------------------------------------------------------------


@require_GET
@console_view
def home(request: HttpRequest) -> HttpResponse:
    """List my queues with their backlog, my live leases, and a Next item button each."""
    queues = list(queues_for_user(user=request.user).order_by("name"))
    now = timezone.now()
    # One pass over the two claim indexes gives every figure for every queue at once. What
    # Next item can hand out is pending work and expired leases alike: the button and the
    # oldest wait go by both, the Pending column by pending items only.
    backlog = {
        row["queue_id"]: row
        for row in ReviewItem.objects.filter(
            Q(state=ItemState.PENDING)
            | Q(state=ItemState.LEASED, lease_expires__lt=now)
            | Q(state=ItemState.HELD, hold_until__lte=now),  # back from hold, not yet claimed
            queue_id__in=[q.pk for q in queues],
        )
        # Hand-off: an escalation this user may not take is not waiting for them.
        .exclude(excluded_reviewer_ids__contains=[request.user.pk])
        .order_by()
        .values("queue_id")
        .annotate(
            pending=Count("pk", filter=Q(state=ItemState.PENDING)),
            waiting=Count("pk"),
            oldest=Min("created_at"),
        )
    }
    leases = list(
        ReviewItem.objects.filter(
            state=ItemState.LEASED, lease_owner_id=request.user.pk, lease_expires__gt=now
        )
        .select_related("queue")
        .only("pk", "subject", "lease_expires", "queue__slug", "queue__name")
        .order_by("lease_expires")
    )
    by_queue = {lease.queue_id: lease for lease in leases}
    for queue in queues:
        row = backlog.get(queue.pk, {})
        queue.pending_count = row.get("pending", 0)
        queue.waiting_count = row.get("waiting", 0)
        queue.oldest_pending = row.get("oldest")
        queue.my_lease = by_queue.get(queue.pk)
    home_deadline_counts(queues, now)  # breached / due soon per queue
    return render(
        request,
        "console/home.html",
        {
            "title": "My queues",
            "queues": queues,
            "leases": leases,
            "now": now,
            # Second-person lanes this user may work (console/_lanes.html).
            "lanes": lanes_for_user(user=request.user, queue_ids=[q.pk for q in queues]),
        },
    )


@post_only
@console_view
def queue_next(request: HttpRequest, slug: str) -> HttpResponse:
    """Lease the next item of the queue to me (or give back the one I hold) and open it."""
    queue = _queue_for(request, slug)
    # The item's id only: its page reads the item.
    item_id = claim_next_id(queue=queue, reviewer=request.user)
    if item_id is None:
        messages.info(request, f"{queue.name}: {QueueEmpty.message}")
        return redirect("home")
    return redirect("item", item_id=item_id)


@require_GET
@console_view
def item_detail(request: HttpRequest, item_id: int) -> HttpResponse:
    """Show an item's evidence and history, with the decision form if I hold its lease."""
    user = request.user
    # The item and every row its page shows in one round trip; the rest is dropped unread when
    # the item is not the user's to see (_reviewable's one answer, as _item_for gives it).
    item, read = (
        read_item_page(item_id=item_id, user_id=user.pk, timeline=_timeline_page(request))
        if user.is_active
        else (None, None)
    )
    return _render_item(request, _reviewable(item), read=read)


def _render_item(
    request: HttpRequest,
    item: ReviewItem,
    form: DecisionForm | None = None,
    status: int = 200,
    read: PageResults | None = None,
    seen: Seen | None = None,
) -> HttpResponse:
    try:
        return _render_item_page(request, item, form, status, read, seen)
    except OperationalError:
        raise  # busy or down, not this item's fault: console_view says "try again"
    except Exception:
        # Nothing a reviewer does can fix an item whose page fails, and Next would hand the same
        # lease back: never leave them looking at a bare 500 with no way out.
        logger.exception("item page failed", extra={"item_id": item.pk})
        return _item_unavailable(request, item.pk)


_UNDECIDED = (ItemState.PENDING, ItemState.LEASED, ItemState.HELD)


def _page_number(value: str | None) -> int:
    """A non-negative page offset from the query string; anything else is the first page."""
    number = _posted_id(value)
    return min(number, 1_000_000) if number is not None else 0


def _timeline_page(request: HttpRequest) -> TimelinePage:
    """Which page of the timeline the item page shows: the latest PAGE entries, or with
    ?timeline=all ALL_PAGE at a time from ?events=<offset>."""
    everything = request.GET.get("timeline") == "all"
    return TimelinePage(
        viewer_id=signed_in_id(request.user),
        offset=_page_number(request.GET.get("events")) if everything else 0,
        limit=ALL_PAGE if everything else PAGE,
    )


def case_context(
    request: HttpRequest,
    item: ReviewItem,
    *,
    evidence: Any,
    blind: bool,
    touched_by: list[str] | None = None,
) -> dict[str, Any]:
    """What the case header shows besides the item: risk badges from the queue's evidence
    rules, and who else has acted on the item (nobody named to a blind QA reviewer). touched_by:
    the names when already read (the item page reads them with the item)."""
    badges: list[tuple[str, str]] = []
    seen: set[str] = set()
    for warning in evidence.warnings:
        if warning.message not in seen:
            seen.add(warning.message)
            badges.append(("danger", warning.message))
    if item.escalated_from_id is not None:
        badges.append(("warning", "Escalated"))
    if item.state == ItemState.HELD:
        badges.append(("info", "On hold"))
    if not evidence.warnings:
        badges.append(("success", "No rule warnings"))
    return {
        "risk_badges": badges,
        "touched_by": (
            []
            if blind
            else touched_by
            if touched_by is not None
            else item_touched_by(item_id=item.pk, viewer_id=signed_in_id(request.user))
        ),
    }


def _item_unavailable(request: HttpRequest, item_id: int) -> HttpResponse:
    """Say the item cannot be shown, and offer its holder the Release button."""
    # Only the lease columns: whatever broke the page (most likely the payload) stays unread.
    lease = (
        ReviewItem.objects.filter(pk=item_id)
        .values("state", "lease_owner_id", "lease_token", "queue__name")
        .first()
    )
    mine = (
        lease is not None
        and lease["state"] == ItemState.LEASED
        and lease["lease_owner_id"] == request.user.pk
    )
    return render(
        request,
        "console/item_unavailable.html",
        {
            "title": "Item cannot be shown",
            "message": ITEM_UNAVAILABLE,
            "item_id": item_id,
            "lease_token": lease["lease_token"] if lease is not None and mine else None,
            "queue_name": lease["queue__name"] if lease is not None else "",
        },
        status=500,
    )


def _render_item_page(
    request: HttpRequest,
    item: ReviewItem,
    form: DecisionForm | None,
    status: int,
    read: PageResults | None,
    seen: Seen | None = None,
) -> HttpResponse:
    now = timezone.now()
    mine = item.state == ItemState.LEASED and item.lease_owner_id == request.user.pk
    # A leased row always has an expiry (check constraint item_lease_columns_match_state).
    expires = item.lease_expires or now
    held_by_other = item.state == ItemState.LEASED and not mine and expires > now
    page = _timeline_page(request)
    rows = item_page_rows(item, mine=mine, held_by_other=held_by_other, read=read, timeline=page)
    # Blind QA (services/blindness.py): asked only when there is a decision to hide.
    blind = (bool(rows.decisions) or item.suggestion is not None) and is_blind_to(
        user=request.user, item_id=item.pk
    )
    if blind:
        rows.decisions = []
    context: dict[str, Any] = {
        "title": item.subject,
        "item": item,
        "queue": item.queue,
        "evidence": evidence_view(item.payload, warnings_for(item.payload, rows.evidence_rules)),
        "decisions": rows.decisions,
        # The checker's note on the decision they returned, for whoever decides the item again.
        "check_return": (
            getattr(rows.decisions[-1], "check_return", None)
            if rows.decisions and item.state in _UNDECIDED
            else None
        ),
        "blind_note": BLIND_NOTE if blind else "",
        "mine": mine,
        "held_by_other": held_by_other,
        "attachments": attachment_cards(request, item),
    }
    context.update(_handoff_context(request, item))
    # The machine's suggestion, as the queue's policy shows it (never to a blind QA reviewer).
    if mine and seen is None:
        seen = _posted_seen(form, item) or seen_on_page(item=item, blind=blind)
    context.update(
        suggestion_context(item, rows.all_reasons, mine=mine, blind=blind, seen=seen or NOT_SHOWN)
    )
    # Deadline, hold and the subject's other items (console/deadline_context.py).
    context.update(
        item_page_extras(request, item, mine=mine, now=now, hold_reasons=rows.hold_reasons)
    )
    context.update(
        case_context(
            request,
            item,
            evidence=context["evidence"],
            blind=blind,
            touched_by=touched_by_from(rows.touched_by),
        ),
        # What was seen of a suggestion is told only where the page shows the suggestion.
        timeline=timeline_from(
            rows.timeline,
            blind=blind,
            show_suggestion=bool(context["suggestion"]),
            offset=page.offset,
            limit=page.limit,
        ),
    )
    if mine:
        # The hash of exactly what this page renders, from the row as loaded above.
        shown = item_evidence_hash(item)
        # What was posted, when the page comes back with an error: nothing typed is lost. A
        # fresh page has no form to show errors of, and builds none (a Django form is a deep
        # copy of its fields: a fifth of a millisecond on every item page).
        posted = form.data if form is not None else {}
        # All verdicts' reasons at once (reason_codes_for is per verdict); the page groups
        # them and the script narrows the list to the chosen verdict.
        reasons = rows.reasons
        if item.queue.escalation_queue_id is None:
            # Escalating needs somewhere to escalate to; don't offer what the server refuses.
            reasons = [r for r in reasons if r.verdict != "escalate"]
        verdicts = [v for v in REVIEW_VERDICTS if any(r.verdict == v for r in reasons)]
        remaining = max(((item.lease_expires or now) - now).total_seconds(), 0.0)
        context.update(
            form=form,  # None on a fresh page: the template's error lines print nothing
            lease_token=item.lease_token,
            shown_hash=shown,
            verdicts=verdicts,
            reasons=reasons,
            chosen_verdict=posted.get("verdict", ""),
            chosen_reason=posted.get("reason_code", ""),
            note=posted.get("note", ""),
            expires_in=int(remaining),
            lease_expired=remaining <= 0,
            ttl_seconds=int(item.queue.lease_ttl / timedelta(seconds=1)),
        )
    return render(request, "console/item.html", context, status=status)


def _posted_seen(form: DecisionForm | None, item: ReviewItem) -> Seen | None:
    """What the page that came back with an error had shown, if it says so validly."""
    if form is None or not form.data.get("suggestion_seen"):
        return None
    try:
        return read_seen_token(
            token=form.data["suggestion_seen"], item_id=item.pk, lease_token=item.lease_token or ""
        )
    except ReviewError:
        return None


def _handoff_context(request: HttpRequest, item: ReviewItem) -> dict[str, Any]:
    """The item's escalation hand-off, and which linked items this user may open."""
    handoff = item_handoff(item=item)
    if handoff.empty:
        return {"handoff": handoff}
    linked = [a.from_item_id for a in handoff.arrived] + [e.pk for e in handoff.escalations]
    mine = set(queues_for_user(user=request.user).values_list("pk", flat=True))
    queue_of = dict(ReviewItem.objects.filter(pk__in=linked).values_list("pk", "queue_id"))
    return {
        "handoff": handoff,
        "handoff_open_ids": {pk for pk, queue_id in queue_of.items() if queue_id in mine},
        "handoff_mine_refused": handoff_refusal(item=item, user=request.user)
        if item.state != ItemState.DECIDED
        else None,
    }


# -- fenced writes ------------------------------------------------------------------------------


@post_only
@console_view
def item_decide(request: HttpRequest, item_id: int) -> HttpResponse:
    """Record my verdict on an item I hold, then open the next item of the same queue."""
    # The queue the page showed the item in goes straight to the decide statement, which checks
    # it (the item is in it, and the reviewer may review it) as it checks the lease token, and
    # returns what the Next claim after it needs of the queue. A page that posts none (from
    # before it was posted) leaves the service to read the item's. Every refusal answers the
    # queue and the access rule first (404, 403), as the item page does.
    form = DecisionForm(request.POST)
    if not form.is_valid():
        _queue_of_item(request, item_id)
        if "lease_token" in form.errors:
            messages.error(request, StaleLease.message)
            return redirect("item", item_id=item_id)
        if "evidence_hash" in form.errors:
            messages.error(request, EvidenceChanged.message)
            return redirect("item", item_id=item_id)
        messages.error(request, "Please correct the errors below; nothing was recorded.")
        return _render_item(request, _item_for(request, item_id), form=form, status=400)
    data = form.cleaned_data
    try:
        try:
            # What the page showed of the machine suggestion, as this server signed it.
            seen = read_seen_token(
                token=data["suggestion_seen"], item_id=item_id, lease_token=data["lease_token"]
            )
            decision = submit_decision(
                item_id=item_id,
                reviewer=request.user,
                lease_token=data["lease_token"],
                verdict=data["verdict"],
                reason_code=data["reason_code"],
                evidence_hash=data["evidence_hash"],
                note=data["note"],
                queue_id=_posted_id(request.POST.get("queue")),
                warnings_seen=data["warnings_seen"],
                suggestion_view=seen.view,
                suggestion_shown_at=seen.shown_at,
            )
        except ReviewError:
            _queue_of_item(request, item_id)  # nothing was written: 404 or 403 first
            raise
    except (StaleLease, EvidenceChanged) as exc:
        # Show the item as it is now: someone else's, decided, or with the new evidence.
        messages.error(request, exc.message)
        return redirect("item", item_id=item_id)
    except (
        InvalidReason,
        InvalidVerdict,
        InvalidBounds,
        WarningsNotSeen,
        SuggestionSeenInvalid,
    ) as exc:
        # The transaction rolled back and the lease is still mine: keep what was typed.
        messages.error(request, exc.message)
        return _render_item(request, _item_for(request, item_id), form=form, status=400)
    messages.success(
        request,
        f"Recorded {decision.get_verdict_display().lower()} ({decision.reason_code.label}) "
        f"on item #{item_id}.",
    )
    # The decide statement brought back what the claim needs of the queue.
    return _open_next(request, decision.queue)


def _open_next(request: HttpRequest, queue: Queue) -> HttpResponse:
    # Claiming is a write, so it happens here in the POST rather than behind a GET redirect.
    try:
        next_id = claim_next_id(queue=queue, reviewer=request.user)
    except NotPermitted as exc:
        messages.error(request, exc.message)
        return redirect("home")
    if next_id is None:
        messages.info(request, f"{queue.name}: {QueueEmpty.message}")
        return redirect("home")
    return redirect("item", item_id=next_id)


@post_only
@console_view
def item_release(request: HttpRequest, item_id: int) -> HttpResponse:
    """Give an item I hold back to its queue."""
    item = _item_for(request, item_id)
    form = LeaseForm(request.POST)
    try:
        if not form.is_valid():
            raise StaleLease()
        release_lease(
            item_id=item.pk,
            reviewer=request.user,
            lease_token=form.cleaned_data["lease_token"],
            queue_id=item.queue_id,
        )
    except StaleLease as exc:
        messages.error(request, exc.message)
        return redirect("item", item_id=item.pk)
    messages.info(request, f"Item #{item.pk} is back in {item.queue.name}.")
    return redirect("home")


def wants_json(request: HttpRequest) -> bool:
    """Whether the page's heartbeat (console.js) sent this, rather than a plain form post."""
    return "application/json" in request.headers.get("Accept", "")


def heartbeat_refused(message: str, status: int) -> JsonResponse:
    return JsonResponse({"ok": False, "message": message}, status=status)


def heartbeat_renewed(expires: datetime) -> JsonResponse:
    """The heartbeat's answer: the new expiry, and the seconds left to it for the countdown."""
    remaining = max((expires - timezone.now()).total_seconds(), 0.0)
    return JsonResponse(
        {"ok": True, "expires": expires.isoformat(), "expires_in": round(remaining, 1)}
    )


@post_only
@console_view
def item_renew(request: HttpRequest, item_id: int) -> HttpResponse:
    """Extend my lease: JSON for the page's heartbeat, a redirect for a plain form post."""
    as_json = wants_json(request)
    try:
        item = _item_for(request, item_id)
    except Refusal as refusal:
        if as_json:
            return heartbeat_refused(refusal.message, refusal.status)
        raise
    form = LeaseForm(request.POST)
    try:
        if not form.is_valid():
            raise StaleLease()
        expires = renew_lease(
            item_id=item.pk,
            reviewer=request.user,
            lease_token=form.cleaned_data["lease_token"],
            queue_id=item.queue_id,
        )
    except NotPermitted as exc:  # access revoked since the page was found (leases_sql.RENEW_LEASE)
        if as_json:
            return heartbeat_refused(exc.message, 403)
        raise
    except StaleLease as exc:
        if as_json:
            return heartbeat_refused(exc.message, 409)
        messages.error(request, exc.message)
        return redirect("item", item_id=item.pk)
    if as_json:
        return heartbeat_renewed(expires)
    messages.info(request, f"Your lease on item #{item.pk} was renewed.")
    return redirect(reverse("item", kwargs={"item_id": item.pk}))
