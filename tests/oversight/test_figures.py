"""The oversight figures against values worked out by hand on fixed histories.

Wilson 95 % interval, z = 1.95996: centre = (p + z²/2n) / (1 + z²/n), half-width =
z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n). Worked once, for 1 of 4: p = 0.25, z² = 3.8415,
1 + z²/n = 1.9604; centre = (0.25 + 0.4802) / 1.9604 = 0.3725; half = 1.96·sqrt(0.046875 +
0.060024) / 1.9604 = 0.3269; so 0.0456 to 0.6994. The others below are the same sum.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queue_app.second_person import Rate
from queue_app.selectors.oversight import read_oversight
from tests.conftest import make_queue
from tests.oversight.conftest import decided, many, qa_review

pytestmark = pytest.mark.django_db


def approx(rate: Rate, value: float | None, low: float | None, high: float | None) -> None:
    assert rate.value == (None if value is None else pytest.approx(value, abs=5e-5))
    if low is None:
        assert rate.interval is None
    else:
        assert rate.interval == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_calibration_counts_people_by_the_band_of_the_suggestions_confidence(
    screen, alice, bob, robot, reviewers_group
):
    # Band 0.00-0.50: 4 decisions at 0.30, 1 agreed.
    many(screen, alice, 4, followed=1, view="shown", confidence="0.30")
    # Band 0.50-0.70: 0.50 is its floor (2, 1 agreed), 0.69 inside it (3, 2 agreed): 5, 3.
    many(screen, bob, 2, followed=1, view="not_shown", confidence="0.50")
    many(screen, alice, 3, followed=2, view="revealed_after_choice", confidence="0.69")
    # Band 0.70-0.80: 0.70 is its floor, not the last band's top: 2, 2 agreed.
    many(screen, bob, 2, followed=2, view="revealed_before_choice", confidence="0.70")
    # Band 0.80-0.90: nothing. Band 0.90-0.95: 3 at 0.94, all agreed.
    many(screen, alice, 3, followed=3, view="shown", confidence="0.94")
    # Band 0.95-1.00, 1 included: 0.95 (2, 1 agreed) and 1 (2, 2 agreed): 4, 3.
    many(screen, bob, 2, followed=1, view="shown", confidence="0.95")
    many(screen, bob, 2, followed=2, view="not_shown", confidence="1")
    # Not counted: the machine's own decision, an item without a suggestion, and a decision
    # older than the 90-day window.
    decided(screen, robot, suggested="approve", verdict="approve", view="automatic",
            confidence="0.95")  # fmt: skip
    decided(screen, alice, suggested=None, verdict="approve", view=None)
    decided(screen, alice, suggested="approve", verdict="approve", confidence="0.30",
            days_ago=91)  # fmt: skip

    figures = read_oversight()

    [q] = figures.queues
    assert q.slug == "screen"
    bands = {b.label: b for b in q.calibration}
    assert list(bands) == [
        "0.00-0.50", "0.50-0.70", "0.70-0.80", "0.80-0.90", "0.90-0.95", "0.95-1.00",
    ]  # fmt: skip
    assert [(b.followed.hits, b.followed.n) for b in q.calibration] == [
        (1, 4), (3, 5), (2, 2), (0, 0), (3, 3), (3, 4),
    ]  # fmt: skip
    approx(bands["0.00-0.50"].followed, 0.25, 0.0456, 0.6994)
    approx(bands["0.00-0.50"].overridden, 0.75, 0.3006, 0.9544)
    approx(bands["0.50-0.70"].followed, 0.6, 0.2307, 0.8824)
    approx(bands["0.50-0.70"].overridden, 0.4, 0.1176, 0.7693)
    approx(bands["0.70-0.80"].followed, 1.0, 0.3424, 1.0)
    approx(bands["0.70-0.80"].overridden, 0.0, 0.0, 0.6576)
    approx(bands["0.80-0.90"].followed, None, None, None)
    approx(bands["0.90-0.95"].followed, 1.0, 0.4385, 1.0)
    approx(bands["0.90-0.95"].overridden, 0.0, 0.0, 0.5615)
    approx(bands["0.95-1.00"].followed, 0.75, 0.3006, 0.9544)
    approx(bands["0.95-1.00"].overridden, 0.25, 0.0456, 0.6994)
    # The team: 1 + 3 + 2 + 3 + 3 = 12 agreed of 18 people's decisions.
    approx(q.team, 12 / 18, 0.4375, 0.8372)
    assert q.automatic == 1


def test_a_history_built_with_automation_bias_shows_the_gap(screen, alice, bob, robot):
    # alice sees the suggestion before choosing: shown 6 (6 agreed), revealed first 4 (3).
    many(screen, alice, 6, followed=6, view="shown")
    many(screen, alice, 4, followed=3, view="revealed_before_choice")
    # bob chooses without it: not shown 6 (2 agreed), revealed after choosing 4 (2).
    many(screen, bob, 6, followed=2, view="not_shown")
    many(screen, bob, 4, followed=2, view="revealed_after_choice")
    # The machine's decisions are in neither group.
    decided(screen, robot, suggested="reject", verdict="reject", view="automatic",
            confidence="0.99")  # fmt: skip

    q = read_oversight().queues[0]

    approx(q.bias.seen, 0.9, 0.5958, 0.9821)  # 9 of 10
    approx(q.bias.unseen, 0.4, 0.1682, 0.6873)  # 4 of 10
    assert q.bias.gap == pytest.approx(0.5)
    # Newcombe: 0.5 - sqrt((0.9 - 0.5958)² + (0.6873 - 0.4)²) = 0.5 - 0.4185 = 0.0816;
    # 0.5 + sqrt((0.9821 - 0.9)² + (0.4 - 0.1682)²) = 0.5 + 0.2459 = 0.7459. Above 0: a gap.
    low, high = q.bias.gap_interval
    assert (low, high) == (pytest.approx(0.0816, abs=5e-5), pytest.approx(0.7459, abs=5e-5))
    # Each reviewer beside the team (13 of 20).
    assert [(r.reviewer, r.followed.hits, r.followed.n) for r in q.reviewers] == [
        ("alice", 9, 10),
        ("bob", 4, 10),
    ]
    approx(q.reviewers[0].followed, 0.9, 0.5958, 0.9821)
    approx(q.reviewers[1].followed, 0.4, 0.1682, 0.6873)
    approx(q.team, 0.65, 0.4329, 0.8188)


def test_a_history_without_automation_bias_shows_none(screen, alice, bob):
    many(screen, alice, 4, followed=3, view="shown")
    many(screen, bob, 4, followed=3, view="revealed_before_choice")
    many(screen, alice, 4, followed=3, view="not_shown")
    many(screen, bob, 4, followed=3, view="revealed_after_choice")

    q = read_oversight().queues[0]

    approx(q.bias.seen, 0.75, 0.4093, 0.9285)  # 6 of 8
    approx(q.bias.unseen, 0.75, 0.4093, 0.9285)  # 6 of 8
    assert q.bias.gap == 0.0
    # 0 ± sqrt((0.75 - 0.4093)² + (0.9285 - 0.75)²) = ± 0.3847: chance covers it.
    low, high = q.bias.gap_interval
    assert (low, high) == (pytest.approx(-0.3847, abs=5e-5), pytest.approx(0.3847, abs=5e-5))
    assert [(r.reviewer, r.followed.hits, r.followed.n) for r in q.reviewers] == [
        ("alice", 6, 8),
        ("bob", 6, 8),
    ]


def test_automatic_decisions_are_measured_against_blind_qa(screen, alice, robot, carol):
    sure = decided(screen, robot, suggested="approve", verdict="approve", view="automatic",
                   confidence="0.90")  # fmt: skip
    wrong = decided(screen, robot, suggested="reject", verdict="reject", view="automatic",
                    confidence="1")  # fmt: skip
    decided(
        screen, robot, suggested="approve", verdict="approve", view="automatic", confidence="0.97"
    )  # fmt: skip (not drawn for QA)
    person = decided(screen, alice, suggested="approve", verdict="approve", view="shown")
    qa_review(sure, carol, verdict="approve")  # agrees
    qa_review(wrong, carol, verdict="approve")  # disagrees
    qa_review(person, carol, verdict="approve")  # a person's decision: not in this figure

    q = read_oversight().queues[0]

    assert q.automatic == 3
    approx(q.automatic_qa, 0.5, 0.0945, 0.9055)  # 1 of 2 reviewed
    # The person's decision is in the people's figures, the machine's are not.
    assert (q.team.hits, q.team.n) == (1, 1)


def test_all_queues_add_up_and_each_queue_stands_alone(screen, alice, bob, reviewers_group):
    other = make_queue("payments", group=reviewers_group)
    many(screen, alice, 5, followed=4, view="shown", confidence="0.60")
    many(other, bob, 5, followed=2, view="not_shown", confidence="0.60")

    figures = read_oversight()

    assert [q.slug for q in figures.queues] == ["payments", "screen"]  # by name
    payments, screen_q = figures.queues
    assert (payments.calibration[1].followed.hits, payments.calibration[1].followed.n) == (2, 5)
    assert (screen_q.calibration[1].followed.hits, screen_q.calibration[1].followed.n) == (4, 5)
    # All queues: 6 of 10 agreed in band 0.50-0.70; seen 4 of 5, not seen 2 of 5.
    approx(figures.all.calibration[1].followed, 0.6, 0.3127, 0.8318)
    assert (figures.all.bias.seen.hits, figures.all.bias.seen.n) == (4, 5)
    assert (figures.all.bias.unseen.hits, figures.all.bias.unseen.n) == (2, 5)
    assert [r.reviewer for r in figures.all.reviewers] == ["alice", "bob"]


def test_it_reads_the_figures_in_two_statements_whatever_the_number_of_queues(
    screen, alice, reviewers_group
):
    for slug in ("one", "two", "three"):
        queue = make_queue(slug, group=reviewers_group)
        many(queue, alice, 2, followed=1, view="shown")
    many(screen, alice, 2, followed=1, view="shown")

    with CaptureQueriesContext(connection) as queries:
        figures = read_oversight()

    assert len(figures.queues) == 4
    assert len(queries) == 2


def test_nothing_to_show_without_suggestions(screen, alice):
    decided(screen, alice, suggested=None, verdict="approve", view=None)

    figures = read_oversight()

    assert figures.queues == []
    assert not figures.any
    assert figures.all.team.n == 0


def test_an_overturn_is_not_counted_as_a_decision_on_the_suggestion(screen, alice, supervisor):
    from queue_app.models import Decision
    from queue_app.services import overturn_decision

    original = decided(screen, alice, suggested="approve", verdict="reject", view="shown")
    overturn_decision(
        decision_id=original.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    assert Decision.objects.filter(verdict="overturn").count() == 1

    q = read_oversight().queues[0]

    # The reviewer's decision (an override) stands in the figures; the correction adds nothing.
    assert (q.team.hits, q.team.n) == (0, 1)
    assert [(r.reviewer, r.followed.n) for r in q.reviewers] == [("alice", 1)]
