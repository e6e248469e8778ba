"""One story of an item on every surface, under random sequences of everything people do.

A hypothesis state machine drives intake, claim, decide, release, hold and its end, attach,
check confirm and return, QA, adjudication, overturn and the apply worker (which opens an
escalate verdict's item) through the services, against real PostgreSQL. After every step each
item is read the way its readers read it (the API's item and its list by subject key as JSON,
the console's item page and same-subject table, the admin's item page, My work's counts, the
export's rows) and all of them must tell the same story: the item's state, the outcome that
stands, and each decision's status. They must also agree with a plain reading of the tables
written here from the rules in docs/architecture.md, so a view that went wrong everywhere at
once would fail too. The walks must reach an overturn the check policy covers, its
confirmation, its return and a new correction of the same decision after the return.
"""

from __future__ import annotations

import contextlib
import importlib
from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import transaction
from django.db.models import Q, QuerySet
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from queue_app import services
from queue_app.apply import apply_batch
from queue_app.errors import ReviewError
from queue_app.evidence import item_evidence_hash
from queue_app.exports import export_rows
from queue_app.models import (
    CheckPolicy,
    Decision,
    DecisionStatus,
    EffectJob,
    HoldReason,
    ItemState,
    LaneOutcome,
    LaneTask,
    ReviewItem,
    story,
)
from queue_app.selectors.my_work import my_work
from tests.api.conftest import caller_for, make_client
from tests.attachments.conftest import PDF_BYTES
from tests.conftest import make_queue

pytestmark = pytest.mark.django_db

SUBJECTS = ("cust-1", "cust-2")
VERDICT_REASONS = {"approve": "verified", "reject": "fraud", "escalate": "policy_gap"}
# Mostly approvals: the check policy covers approvals, and the lanes are where stories diverge.
VERDICTS = st.sampled_from(["approve", "approve", "approve", "reject", "reject", "escalate"])
MAX_ITEMS = 4
STANDING = {"escalated", "applied", "confirmed", "pending"}
HELD_BACK = {"awaiting_check", "returned"}
# Every status and item state the run has shown, so the test can tell that its random walks
# reached each of them (derandomized: the same walks every run).
SEEN: Counter[str] = Counter()


def _expected(item: ReviewItem) -> tuple[str | None, dict[int, str]]:
    """The standing outcome and each decision's status, read plainly from the tables."""
    decisions = list(Decision.objects.filter(item=item).order_by("id"))
    checks: dict[int, str | None] = {}
    for task in LaneTask.objects.filter(item=item, kind="check"):
        outcome = LaneOutcome.objects.filter(task=task).first()
        checks[task.decision_id] = outcome.result if outcome else None
    applied = set(
        Decision.objects.filter(item=item, applied__isnull=False).values_list("pk", flat=True)
    )

    def held_back(d: Decision) -> bool:
        return d.pk in checks and checks[d.pk] != "confirmed"

    replaced = {d.supersedes_id for d in decisions if d.supersedes_id and not held_back(d)}
    status: dict[int, str] = {}
    for d in decisions:
        if d.pk in checks and checks[d.pk] is None:
            status[d.pk] = "awaiting_check"
        elif d.pk in checks and checks[d.pk] == "returned":
            status[d.pk] = "returned"
        elif d.pk in replaced:
            status[d.pk] = "superseded" if d.verdict == "overturn" else "overturned"
        elif d.verdict == "escalate":
            status[d.pk] = "escalated"
        elif d.pk in applied:
            status[d.pk] = "applied"
        elif checks.get(d.pk) == "confirmed":
            status[d.pk] = "confirmed"
        else:
            status[d.pk] = "pending"
    standing = [d for d in decisions if status[d.pk] in STANDING]
    return (standing[-1].standing_verdict if standing else None), status


class ItemStoryMachine(RuleBasedStateMachine):
    """People working one checked, QA-sampled queue (and its escalation queue) at random."""

    def __init__(self) -> None:
        super().__init__()
        # Each example runs in a savepoint of the test's transaction, rolled back at teardown.
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        group = Group.objects.create(name="Reviewers")
        escalation = make_queue("escalation", group=group)
        self.queue = make_queue(
            "recon",
            group=group,
            escalation_queue=escalation,
            lease_ttl=timedelta(minutes=5),
            # Every effective decision is drawn for QA: the draw hashes the lease's random
            # token, so a rate below 100 would make the derandomized walks differ run to run.
            qa_rate=Decimal("100"),
        )
        self.queues = [self.queue, escalation]
        for queue in self.queues:
            HoldReason.objects.create(queue=queue, code="docs", label="Awaiting documents")
        CheckPolicy.objects.create(
            queue=self.queue, verdict="approve", path="amount", threshold=Decimal("1000.00")
        )
        self.people = [
            User.objects.create_user(name, password="pw-" + name) for name in ("ann", "ben", "cy")
        ]
        for person in self.people:
            person.groups.add(group)
        overturn = Permission.objects.get(codename="can_overturn")
        self.seniors = []
        # Three, so that after a checker returns one's overturn another may correct again.
        for name in ("dee", "eli", "fay"):
            senior = User.objects.create_user(name, password="pw-" + name, is_staff=True)
            senior.groups.add(group)
            senior.user_permissions.add(overturn)
            self.seniors.append(User.objects.get(pk=senior.pk))
        # Readers who never act: their view of an item is everyone's.
        self.reader = User.objects.create_user("rhea", password="pw-rhea")
        self.reader.groups.add(group)
        self.root = User.objects.create_superuser("root", password="pw-root")
        _, token = make_client("upstream", self.queues)
        self.api = caller_for(token)
        self.console = Client()
        self.console.force_login(self.reader)
        self.admin = Client()
        self.admin.force_login(self.root)
        self.leases: dict[int, ReviewItem] = {}  # user id -> the item they hold
        self.told: dict[int, tuple] = {}  # item id -> its story as last read on every surface
        self.intakes = 0

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    # -- steps ---------------------------------------------------------------------------
    # Each step is enabled only when it can do something, so the walks spend their length on
    # work rather than on refusals; a refusal that still comes (four eyes, a barred checker)
    # is part of the walk.

    def _exists(self, **filters: object) -> bool:
        return ReviewItem.objects.filter(**filters).exists()

    def _open(self, kind: str) -> bool:
        return LaneTask.objects.filter(kind=kind, state="open").exists()

    def _lane(self, data: st.DataObject, kind: str, people: list[User]) -> tuple[User, LaneTask]:
        """The first of the people, in a drawn order, the lane gives a task to."""
        for person in data.draw(st.permutations(people)):
            with contextlib.suppress(ReviewError):
                task = services.claim_lane_task(queue=self.queue, kind=kind, user=person)
                if task is not None:
                    return person, task
        return people[0], None  # type: ignore[return-value]

    @precondition(lambda self: self.intakes < MAX_ITEMS)
    # Mostly write-offs the check policy covers: the lanes are where stories diverge.
    @rule(
        amount=st.sampled_from(["1500.00", "1500.00", "10.00"]), subject=st.sampled_from(SUBJECTS)
    )
    def intake(self, amount: str, subject: str) -> None:
        self.intakes += 1
        services.create_item(
            queue=self.queue,
            subject=f"Write-off {self.intakes}",
            payload={"amount": amount},
            idempotency_key=f"k{self.intakes}",
            subject_key=subject,
        )

    def _claim(self, person: User) -> ReviewItem | None:
        for queue in self.queues:
            with contextlib.suppress(ReviewError):
                item = services.claim_next(queue=queue, reviewer=person)
                if item is not None:
                    self.leases[person.pk] = item
                    return item
        return None

    @precondition(lambda self: self._exists(state=ItemState.PENDING))
    @rule(data=st.data())
    def claim(self, data: st.DataObject) -> None:
        self._claim(data.draw(st.sampled_from(self.people)))

    # The day's work: claim the next item and decide it.
    @precondition(lambda self: self._exists(state=ItemState.PENDING))
    @rule(data=st.data(), verdict=VERDICTS)
    def review(self, data: st.DataObject, verdict: str) -> None:
        person = data.draw(st.sampled_from([p for p in self.people if p.pk not in self.leases]))
        if self._claim(person) is not None:
            self._decide(person, self.leases.pop(person.pk), verdict)

    def _holder(self, data: st.DataObject) -> tuple[User, ReviewItem]:
        person = data.draw(st.sampled_from([p for p in self.people if p.pk in self.leases]))
        return person, self.leases.pop(person.pk)

    @precondition(lambda self: self.leases)
    @rule(data=st.data(), verdict=VERDICTS)
    def decide(self, data: st.DataObject, verdict: str) -> None:
        self._decide(*self._holder(data), verdict)

    def _decide(self, person: User, held: ReviewItem, verdict: str) -> None:
        with contextlib.suppress(ReviewError):
            services.submit_decision(
                item_id=held.pk,
                reviewer=person,
                lease_token=held.lease_token,
                verdict=verdict,
                reason_code=VERDICT_REASONS[verdict],
                evidence_hash=item_evidence_hash(ReviewItem.objects.get(pk=held.pk)),
            )

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        person, held = self._holder(data)
        with contextlib.suppress(ReviewError):
            services.release_lease(item_id=held.pk, reviewer=person, lease_token=held.lease_token)

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def hold(self, data: st.DataObject) -> None:
        person, held = self._holder(data)
        with contextlib.suppress(ReviewError):
            services.hold_item(
                item_id=held.pk,
                reviewer=person,
                lease_token=held.lease_token,
                reason_code="docs",
                hold_until=timezone.now() + timedelta(hours=1),
            )

    @precondition(lambda self: self._exists(state=ItemState.HELD))
    @rule(data=st.data())
    def end_hold(self, data: st.DataObject) -> None:
        held = list(ReviewItem.objects.filter(state=ItemState.HELD).order_by("id"))
        item = data.draw(st.sampled_from(held))
        with transaction.atomic():
            ReviewItem.objects.select_for_update().get(pk=item.pk)
            services.resume_hold(item_id=item.pk, actor=self.root, cause="test")

    @precondition(lambda self: self._exists(state__in=[ItemState.PENDING, ItemState.LEASED]))
    @rule(data=st.data())
    def attach(self, data: st.DataObject) -> None:
        open_items = ReviewItem.objects.filter(state__in=[ItemState.PENDING, ItemState.LEASED])
        item = data.draw(st.sampled_from(list(open_items.order_by("id"))))
        with contextlib.suppress(ReviewError):
            services.put_attachment(
                item_id=item.pk, actor=self.root, name="statement.pdf", data=PDF_BYTES
            )

    @precondition(lambda self: self._open("check"))
    @rule(data=st.data(), confirm=st.booleans())
    def check(self, data: st.DataObject, confirm: bool) -> None:
        person, task = self._lane(data, "check", self.people)
        if task is None:
            return
        with contextlib.suppress(ReviewError):
            if confirm:
                services.confirm_check(task_id=task.pk, user=person, lease_token=task.lease_token)
            else:
                services.return_check(
                    task_id=task.pk, user=person, lease_token=task.lease_token, note="Recheck"
                )
            if task.decision.verdict == "overturn":
                SEEN["path: overturn " + ("confirmed" if confirm else "returned")] += 1

    @precondition(lambda self: self._open("qa"))
    @rule(data=st.data(), verdict=st.sampled_from(["approve", "reject"]))
    def qa(self, data: st.DataObject, verdict: str) -> None:
        person, task = self._lane(data, "qa", self.people)
        if task is None:
            return
        with contextlib.suppress(ReviewError):
            services.record_qa_review(
                task_id=task.pk,
                user=person,
                lease_token=task.lease_token,
                verdict=verdict,
                reason_code=VERDICT_REASONS[verdict],
            )

    @precondition(lambda self: self._open("adjudication"))
    @rule(data=st.data(), outcome=st.sampled_from(["uphold", "overturn", "close"]))
    def adjudicate(self, data: st.DataObject, outcome: str) -> None:
        senior, task = self._lane(data, "adjudication", self.seniors)
        if task is None:
            return
        with contextlib.suppress(ReviewError):
            services.adjudicate(
                task_id=task.pk,
                user=senior,
                lease_token=task.lease_token,
                uphold=outcome == "uphold",
                close=outcome == "close",
                reason_code="reviewer_error" if outcome == "overturn" else "",
            )
            SEEN[f"path: adjudication {outcome}"] += 1

    @precondition(lambda self: self._overturnable().exists())
    @rule(data=st.data(), who=st.integers(0, 2))
    def overturn(self, data: st.DataObject, who: int) -> None:
        target = data.draw(st.sampled_from(list(self._overturnable().order_by("id"))))
        flipped = "reject" if target.standing_verdict == "approve" else "approve"
        after_return = bool(services.overturns_returned(decision_id=target.pk))
        with contextlib.suppress(ReviewError):
            overturn = services.overturn_decision(
                decision_id=target.pk,
                admin=self.seniors[who],
                corrected_verdict=flipped,
                reason_code="reviewer_error",
            )
            if getattr(overturn, "awaiting_check", False):
                SEEN["path: overturn awaiting its check"] += 1
            if after_return:
                SEEN["path: a new correction after a return"] += 1

    # A rejected write-off corrected to approve: an overturn the check policy covers, so the
    # walks reach its check, its confirmation or return, and the correction after a return.
    @precondition(lambda self: self._covered().exists())
    @rule(data=st.data(), who=st.integers(0, 2))
    def correct_a_rejection(self, data: st.DataObject, who: int) -> None:
        target = data.draw(st.sampled_from(list(self._covered().order_by("id"))))
        after_return = bool(services.overturns_returned(decision_id=target.pk))
        with contextlib.suppress(ReviewError):
            overturn = services.overturn_decision(
                decision_id=target.pk,
                admin=self.seniors[who],
                corrected_verdict="approve",
                reason_code="reviewer_error",
            )
            assert getattr(overturn, "awaiting_check", False)
            SEEN["path: overturn awaiting its check"] += 1
            if after_return:
                SEEN["path: a new correction after a return"] += 1

    def _covered(self) -> QuerySet[Decision]:
        return self._overturnable().filter(
            Q(verdict="reject") | Q(corrected_verdict="reject"), item__payload__amount="1500.00"
        )

    def _overturnable(self) -> QuerySet[Decision]:
        return Decision.objects.filter(
            story__stands=True, verdict__in=["approve", "reject", "overturn"]
        )

    @precondition(lambda self: EffectJob.objects.filter(done_at__isnull=True).exists())
    @rule()
    def apply(self) -> None:
        # The claim takes jobs due by now(), the start of the transaction every step of an
        # example runs in; a job written since is made due as the worker's next round finds it.
        EffectJob.objects.filter(done_at__isnull=True).update(
            next_attempt_at=timezone.now() - timedelta(hours=1)
        )
        apply_batch(batch_size=50)

    # -- the story, read from every surface ------------------------------------------------

    @invariant()
    def every_surface_tells_one_story(self) -> None:
        items = {item.pk: item for item in ReviewItem.objects.order_by("id")}
        truth = {pk: (item.state, *_expected(item)) for pk, item in items.items()}
        for state, _, status in truth.values():
            SEEN.update(status.values())
            SEEN[f"item {state}"] += 1
        # Surfaces only read: an item whose story has not changed since the last step was
        # already read on every one of them. Reading only the changed ones (and every item of
        # their subjects) keeps the walks long enough to reach every status.
        changed = [pk for pk in items if self.told.get(pk) != truth[pk]]
        if not changed:
            return
        export = {row["decision_id"]: row["status"] for row in export_rows(Decision.objects.all())}
        overturns: dict[int, list[int]] = {}
        for o, d in Decision.objects.filter(supersedes__isnull=False).values_list(
            "pk", "supersedes_id"
        ):
            overturns.setdefault(d, []).append(o)
        for pk in changed:
            state, standing, status = truth[pk]
            assert services.standing_outcome(item=pk) == standing

            api = self.api.get(f"/items/{pk}")
            assert api.status == 200, api.body
            assert (api.body["state"], api.body["standing_outcome"]) == (state, standing)
            assert {d["id"]: d["status"] for d in api.body["decisions"]} == status

            page = self.console.get(f"/items/{pk}/")
            assert page.status_code == 200
            assert page.context["item"].state == state
            assert {d.pk: d.story_status for d in page.context["decisions"]} == status
            # The same-subject table beside it: the subject's other items.
            for row in page.context["subject_items"]:
                assert (row["state"], row["verdict"]) == truth[row["id"]][:2]

            admin = self.admin.get(f"/admin/queue_app/reviewitem/{pk}/change/")
            assert admin.status_code == 200
            assert admin.context["timeline"].standing_verdict == standing

            assert {d: export[d] for d in status} == status

            # A decision has at most one overturn that is not returned; the admin's overturn
            # page and the services name that one (a standing decision's is awaiting its check).
            for d, shown in status.items():
                current = services.overturn_of(decision_id=d)
                live = [o for o in overturns.get(d, ()) if status[o] != "returned"]
                assert ([current.pk] if current else []) == live
                if current is not None and shown in STANDING:
                    assert status[current.pk] == "awaiting_check"

        for subject in {items[pk].subject_key for pk in changed} - {None}:
            listed = self.api.get(f"/items?subject_key={subject}")
            assert listed.status == 200
            for row in listed.body["items"]:
                assert (row["state"], row["standing_outcome"]) == truth[row["id"]][:2]

        # My work: each person's verdicts held back or returned are counted apart, as the
        # decisions' statuses say.
        statuses = {d: shown for _, _, status in truth.values() for d, shown in status.items()}
        for person in self.people:
            counted: Counter[tuple[str, str | None]] = Counter()
            for queue in my_work(reviewer_id=person.pk).counts:
                for v in queue.verdicts:
                    counted[(v.verdict, v.held)] += v.month
            expected: Counter[tuple[str, str | None]] = Counter()
            for decision in Decision.objects.filter(reviewer=person).exclude(verdict="overturn"):
                held = statuses[decision.pk]
                expected[(decision.verdict, held if held in HELD_BACK else None)] += 1
            assert counted == expected
        self.told = truth


def test_every_surface_tells_one_story_of_every_item(db) -> None:
    run_state_machine_as_test(
        ItemStoryMachine,
        settings=settings(
            max_examples=8,
            stateful_step_count=30,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    statuses = {s.value for s in DecisionStatus}
    states = {f"item {s.value}" for s in ItemState}
    paths = {
        "path: overturn awaiting its check",
        "path: overturn confirmed",
        "path: overturn returned",
        "path: a new correction after a return",
    }
    wanted = statuses | states | paths
    assert wanted <= set(SEEN), f"never reached: {wanted - set(SEEN)}"


def test_the_migration_creates_the_views_story_describes() -> None:
    # models/story.py holds the current definition; the migration a copy that history keeps.
    migration = importlib.import_module("queue_app.migrations.0028_item_story")
    for name in ("DECISION_STATUS_VIEW", "ITEM_STORY_VIEW", "DROP_VIEWS"):
        assert getattr(migration, name) == getattr(story, name), name
