"""Cohen's kappa and Wilson intervals against worked textbook figures."""

from __future__ import annotations

import pytest

from queue_app.second_person import cohens_kappa, kappa_from_table, wilson_interval


def test_kappa_of_the_textbook_table():
    # The worked example of Cohen's kappa (Wikipedia, "Cohen's kappa", first example): two
    # readers of 50 grant proposals; yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = 0.4.
    table = {("yes", "yes"): 20, ("yes", "no"): 5, ("no", "yes"): 10, ("no", "no"): 15}
    assert kappa_from_table(table) == pytest.approx(0.4)


def test_kappa_of_the_second_textbook_table():
    # Same article: 45/15/25/15 gives p_o = 0.6, p_e = 0.54, kappa = 0.06/0.46 = 0.1304.
    table = {("yes", "yes"): 45, ("yes", "no"): 15, ("no", "yes"): 25, ("no", "no"): 15}
    assert kappa_from_table(table) == pytest.approx(0.1304, abs=1e-4)


def test_kappa_from_pairs_matches_the_table():
    pairs = [("a", "a")] * 20 + [("a", "b")] * 5 + [("b", "a")] * 10 + [("b", "b")] * 15
    assert cohens_kappa(pairs) == pytest.approx(0.4)


def test_kappa_is_undefined_without_variation_or_cases():
    assert kappa_from_table({}) is None
    assert kappa_from_table({("approve", "approve"): 12}) is None


def test_perfect_and_chance_agreement():
    assert kappa_from_table({("a", "a"): 5, ("b", "b"): 5}) == pytest.approx(1.0)
    assert kappa_from_table({("a", "a"): 5, ("a", "b"): 5, ("b", "a"): 5, ("b", "b"): 5}) == (
        pytest.approx(0.0)
    )


@pytest.mark.parametrize(
    ("hits", "n", "low", "high"),
    [
        (5, 10, 0.2366, 0.7634),  # symmetric around one half
        (0, 10, 0.0, 0.2775),  # stays inside [0, 1], unlike the normal approximation
        (10, 10, 0.7225, 1.0),
        (81, 263, 0.2553, 0.3662),  # the Wikipedia "Binomial proportion" worked example
    ],
)
def test_wilson_interval(hits, n, low, high):
    lo, hi = wilson_interval(hits, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_interval_without_a_sample():
    assert wilson_interval(0, 0) is None
