"""The /metrics exposition: the /ops/ figures as Prometheus gauges labelled by queue.

A fresh registry per scrape, filled from one OpsSnapshot, so a scrape costs the same handful
of aggregate statements as the dashboard and no state lives in the web process (several
gunicorn workers would otherwise each report their own).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any, cast

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from queue_app.second_person import Rate
from queue_app.selectors.agreement import Agreement
from queue_app.selectors.appeal_figures import AppealFigures, read_appeal_figures
from queue_app.selectors.deadline_figures import SLA_WINDOW_HOURS, SlaFigures, read_sla
from queue_app.selectors.health import sealing_backlog
from queue_app.selectors.lane_figures import LaneFigures, read_lane_figures
from queue_app.selectors.oversight import OversightFigures, read_oversight
from queue_app.selectors.queue_figures import OpsSnapshot, read_snapshot
from queue_app.selectors.statement_figures import StatementFigures, read_statement_figures

PREFIX = "reviewconsole"


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=labels)


class SnapshotCollector(Collector):
    """Yield one gauge family per figure, one sample per queue (and bucket, verdict...)."""

    def __init__(self, snapshot: OpsSnapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        q = ["queue"]
        pending = _gauge("items_pending", "Items waiting for a reviewer.", q)
        leased = _gauge("items_leased", "Items under a lease (live or expired).", q)
        expired = _gauge("leases_expired", "Leases past their expiry, not yet re-claimed.", q)
        ceiling = _gauge("max_in_flight", "The queue's max in flight (items leased at once).", q)
        oldest = _gauge(
            "oldest_pending_age_seconds", "Age of the oldest pending item (0 when none).", q
        )
        histogram = _gauge(
            "open_items_by_lease_count",
            "Open items by how many times they have been leased (abandonment).",
            ["queue", "lease_count"],
        )
        last_hour = _gauge(
            "decisions_current_hour", "Reviewer verdicts since the start of this hour.", q
        )
        window = _gauge(
            "decisions_window", f"Reviewer verdicts in the last {snap.window_hours} hours.", q
        )
        overturns = _gauge(
            "overturns_window",
            f"Overturns in the last {snap.window_hours} hours (not counted as decisions).",
            q,
        )
        ttd = _gauge(
            "handling_time_seconds",
            f"Claim-to-decision time percentiles over the last {snap.window_hours} hours.",
            ["queue", "quantile"],
        )
        ttl = _gauge("lease_ttl_seconds", "The queue's configured lease TTL.", q)
        suggested = _gauge(
            "suggested_lease_ttl_seconds",
            "Lease TTL the observed p99 handling time suggests (p99 x 1.25, next minute).",
            q,
        )
        reasons = _gauge(
            "reason_code_decisions",
            f"Reviewer verdicts per verdict and reason code in the last {snap.window_hours} "
            "hours (overturns not counted, as in decisions_window).",
            ["queue", "verdict", "reason_code"],
        )
        unapplied = _gauge("decisions_unapplied", "Decisions whose effect is not applied yet.", q)
        overdue = _gauge(
            "decisions_unapplied_overdue",
            "Decisions not applied after the alert threshold (UNAPPLIED_ALERT_MINUTES).",
            q,
        )
        lag = _gauge("apply_lag_seconds", "Age of the oldest unapplied decision (0 when none).", q)
        dead = _gauge("effect_jobs_dead", "Effect jobs that gave up and need an operator.", q)
        blocked = _gauge(
            "effect_jobs_blocked",
            "Effect jobs waiting behind a dead job of the same item (effects run in order).",
            q,
        )

        for f in snap.queues:
            label = [f.slug]
            pending.add_metric(label, f.pending)
            leased.add_metric(label, f.leased)
            expired.add_metric(label, f.expired_leases)
            ceiling.add_metric(label, f.max_in_flight)
            oldest.add_metric(label, _secs(f.oldest_pending_age))
            for bucket, count in zip(f.histogram_labels, f.lease_histogram, strict=True):
                histogram.add_metric([f.slug, bucket], count)
            last_hour.add_metric(label, f.decisions_last_hour)
            window.add_metric(label, f.decisions_last_window)
            overturns.add_metric(label, f.overturns_last_window)
            # No sample rather than a made-up zero when a queue has no decisions yet.
            for quantile, value in (("0.5", f.ttd_p50), ("0.9", f.ttd_p90), ("0.99", f.ttd_p99)):
                if value is not None:
                    ttd.add_metric([f.slug, quantile], value.total_seconds())
            ttl.add_metric(label, f.lease_ttl.total_seconds())
            if f.suggested_lease_ttl is not None:
                suggested.add_metric(label, f.suggested_lease_ttl.total_seconds())
            for verdict, shares in f.reason_shares.items():
                for share in shares:
                    reasons.add_metric([f.slug, verdict, share.code], share.decisions)
            unapplied.add_metric(label, f.unapplied)
            overdue.add_metric(label, f.unapplied_overdue)
            lag.add_metric(label, _secs(f.oldest_unapplied_age))
            dead.add_metric(label, f.dead_jobs)
            blocked.add_metric(label, f.blocked_jobs)
        yield from (
            pending, leased, expired, ceiling, oldest, histogram, last_hour, window, overturns,
            ttd, ttl, suggested, reasons, unapplied, overdue, lag, dead, blocked,
        )  # fmt: skip


def _secs(value: timedelta | None) -> float:
    return value.total_seconds() if value is not None else 0.0


def exposition(*, accept: str = "", snapshot: OpsSnapshot | None = None) -> tuple[bytes, str]:
    """Return the current figures encoded for the scraper's Accept header, and its media type."""
    # Prometheus text format by default; OpenMetrics when the scraper asks for it.
    encoder, content_type = choose_encoder(accept)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot or read_snapshot(blocked=False)))
    registry.register(SlaCollector(read_sla()))  # deadlines and holds
    # Second-person lanes: backlogs, ages, return rate, QA agreement and kappa per queue.
    registry.register(LaneCollector(read_lane_figures()))
    # Machine suggestions: calibration per confidence band, automation bias, automatic vs QA.
    registry.register(OversightCollector(read_oversight()))
    # The sealed log: what waits for the sealer. From the primary, as doctor reads
    # it: the lists are short, and a lagging replica would show entries sealed since as waiting
    # (its age grows with the lag), an alarm about the sealer that is really about the replica.
    registry.register(SealingCollector(sealing_backlog()))
    register_statement_figures(registry)
    registry.register(AppealCollector(read_appeal_figures()))
    return encoder(registry), content_type


def register_statement_figures(registry: CollectorRegistry) -> None:
    """Statements of reasons per queue: built, sent, and failing by why."""
    registry.register(StatementCollector(read_statement_figures()))


class StatementCollector(Collector):
    """Statements built, sent, and failing (refused by the contract, dead, waiting)."""

    def __init__(self, figures: list[StatementFigures]) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        q = ["queue"]
        built = _gauge("statements_built", "Statements of reasons built.", q)
        sent = _gauge("statements_sent", "Statements every delivery of which is done.", q)
        failing = _gauge(
            "statements_failing",
            "Statements not sent, by why: refused (by the contract), dead, waiting.",
            ["queue", "why"],
        )
        for f in self.figures:
            built.add_metric([f.queue], f.built)
            sent.add_metric([f.queue], f.sent)
            for why, count in (("refused", f.refused), ("dead", f.dead), ("waiting", f.waiting)):
                failing.add_metric([f.queue, why], count)
        yield from (built, sent, failing)


class AppealCollector(Collector):
    """Appeals per queue: received, pending, past deadline, decided, reversed (with the Wilson
    interval of the reversed share), median seconds to decide."""

    def __init__(self, figures: list[AppealFigures]) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        q = ["queue"]
        received = _gauge("appeals_received", "Appeals received.", q)
        pending = _gauge("appeals_pending", "Appeals waiting for a decision.", q)
        past = _gauge("appeals_past_deadline", "Appeals waiting past their deadline.", q)
        decided = _gauge("appeals_decided", "Appeals upheld or reversed.", q)
        reversed_ = _gauge("appeals_reversed", "Appeals that reversed the decision.", q)
        share = _gauge(
            "appeals_reversed_share",
            "Reversed share of decided appeals, with its 95% Wilson interval (bound).",
            ["queue", "bound"],
        )
        median = _gauge(
            "appeals_median_seconds_to_decide", "Median seconds from receipt to decision.", q
        )
        dead = _gauge("appeals_notices_dead", "Appeal outcome notices that are dead.", q)
        returned = _gauge(
            "appeals_reversals_returned",
            "Appeal reversals whose overturn its checker returned: not final, notice held.",
            q,
        )
        for f in self.figures:
            received.add_metric([f.queue], f.received)
            pending.add_metric([f.queue], f.pending)
            past.add_metric([f.queue], f.past_deadline)
            decided.add_metric([f.queue], f.decided)
            reversed_.add_metric([f.queue], f.reversed)
            dead.add_metric([f.queue], f.notices_dead)
            returned.add_metric([f.queue], f.reversals_returned)
            if f.reversed_share is not None and f.reversed_interval is not None:
                share.add_metric([f.queue, "value"], f.reversed_share)
                share.add_metric([f.queue, "low"], f.reversed_interval[0])
                share.add_metric([f.queue, "high"], f.reversed_interval[1])
            if f.median_seconds is not None:
                median.add_metric([f.queue], f.median_seconds)
        yield from (received, pending, past, decided, reversed_, share, median, dead, returned)


class SealingCollector(Collector):
    """Decisions and second-person outcomes committed but not yet sealed into a batch.

    The apply worker seals every second, so both stay near zero; a growing age means it has
    stopped, and what is unsealed is in no checkpoint (doctor UNSEALED says the same).
    """

    def __init__(self, backlog: dict[str, Any]) -> None:
        self.backlog = backlog

    def collect(self) -> Iterator[Metric]:
        b = self.backlog
        kind = ["kind"]
        waiting = _gauge("unsealed_entries", "Committed entries not yet in a sealed batch.", kind)
        oldest = _gauge(
            "unsealed_oldest_age_seconds",
            "Age of the oldest entry waiting for the sealer (0 when none).",
            kind,
        )
        for label, count, since in (
            ("decision", b["decisions"], b["oldest_decision"]),
            ("outcome", b["outcomes"], b["oldest_outcome"]),
        ):
            waiting.add_metric([label], count)
            oldest.add_metric(
                [label], max((b["now"] - since).total_seconds(), 0.0) if since else 0.0
            )
        yield from (waiting, oldest)


class SlaCollector(Collector):
    """Deadline and hold gauges per queue (queue_app/selectors/deadline_figures.py)."""

    def __init__(self, figures: list[SlaFigures]) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        q = ["queue"]
        breached = _gauge(
            "items_breached",
            "Open items past their deadline (items awaiting their check included).",
            q,
        )
        breached_checks = _gauge(
            "items_breached_awaiting_check",
            "Of the breached items, those decided but awaiting their check.",
            q,
        )
        at_risk = _gauge(
            "items_at_risk", "Open items due within the queue's SLA warning window.", q
        )
        on_hold = _gauge("items_on_hold", "Items on hold, not yet due back.", q)
        oldest_hold = _gauge(
            "oldest_hold_age_seconds", "How long the oldest hold has lasted (0 when none).", q
        )
        late = _gauge(
            "decisions_after_deadline_window",
            "Outcomes made final after the item's deadline in the last "
            f"{SLA_WINDOW_HOURS} hours (a checked decision at its confirmation).",
            q,
        )
        ttd = _gauge(
            "time_to_deadline_at_decision_seconds",
            f"Time left to the deadline when the outcome became final, last {SLA_WINDOW_HOURS} "
            "hours (negative: late).",
            ["queue", "quantile"],
        )
        for f in self.figures:
            label = [f.slug]
            breached.add_metric(label, f.breached)
            breached_checks.add_metric(label, f.breached_checks)
            at_risk.add_metric(label, f.at_risk)
            on_hold.add_metric(label, f.on_hold)
            oldest_hold.add_metric(label, _secs(f.oldest_hold_age))
            late.add_metric(label, f.decided_late)
            for quantile, value in (("0.5", f.ttd_p50), ("0.9", f.ttd_p90)):
                if value is not None:
                    ttd.add_metric([f.slug, quantile], value.total_seconds())
        yield from (breached, breached_checks, at_risk, on_hold, oldest_hold, late, ttd)


class LaneCollector(Collector):
    """Prometheus gauges for the lanes (registered beside the snapshot's)."""

    def __init__(self, figures: LaneFigures) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        f = self.figures

        def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)

        lane = ["queue", "lane"]
        waiting = gauge(
            "lane_tasks_waiting", "Open second-person tasks (checks, QA, adjudication).", lane
        )
        leased = gauge("lane_tasks_leased", "Second-person tasks under a live lease.", lane)
        oldest = gauge(
            "lane_oldest_age_seconds", "Age of the lane's oldest open task (0 when none).", lane
        )
        for b in f.backlog:
            waiting.add_metric([b.slug, b.kind], b.open)
            leased.add_metric([b.slug, b.kind], b.leased)
            oldest.add_metric(
                [b.slug, b.kind], b.oldest_age.total_seconds() if b.oldest_age else 0.0
            )
        days = f.window.days
        returned = gauge(
            "check_return_ratio", f"Share of checks returned, last {days} days.", ["queue"]
        )
        for slug, rate in f.returns.items():
            if rate.value is not None:
                returned.add_metric([slug], rate.value)
        reviews = gauge("qa_reviews_window", f"QA reviews in the last {days} days.", ["queue"])
        agree = gauge(
            "qa_verdict_agreement_ratio",
            f"Share of QA reviews agreeing with the verdict, last {days} days.",
            ["queue"],
        )
        low = gauge(
            "qa_verdict_agreement_wilson_low", "Wilson 95 % lower bound of that share.", ["queue"]
        )
        high = gauge(
            "qa_verdict_agreement_wilson_high", "Wilson 95 % upper bound of that share.", ["queue"]
        )
        kappa = gauge(
            "qa_kappa", f"Cohen's kappa of QA against decisions, last {days} days.", ["queue"]
        )
        for row in f.agreement:
            a: Agreement = row["agreement"]
            label = [row["slug"]]
            reviews.add_metric(label, a.verdict.n)
            if a.verdict.value is not None:
                agree.add_metric(label, a.verdict.value)
                # value and interval are None together (no sample): here both are set.
                lo, hi = cast(tuple[float, float], a.verdict.interval)
                low.add_metric(label, lo)
                high.add_metric(label, hi)
            if a.kappa is not None:
                kappa.add_metric(label, a.kappa)
        yield from (waiting, leased, oldest, returned, reviews, agree, low, high, kappa)


class OversightCollector(Collector):
    """Oversight of machine suggestions per queue (queue_app/selectors/oversight.py): the
    calibration table and the automation-bias indicator, as on /ops/."""

    def __init__(self, figures: OversightFigures) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        days = self.figures.window.days
        band = ["queue", "band"]
        band_n = _gauge(
            "suggestion_band_decisions",
            f"People's decisions on suggested items per confidence band, last {days} days.",
            band,
        )
        band_rate = _gauge(
            "suggestion_band_followed_ratio",
            "Share of those decisions that agreed with the suggestion (1 - override rate).",
            band,
        )
        band_low = _gauge(
            "suggestion_band_followed_wilson_low", "Wilson 95 % lower bound of that share.", band
        )
        band_high = _gauge(
            "suggestion_band_followed_wilson_high", "Wilson 95 % upper bound of that share.", band
        )
        seen = ["queue", "seen"]
        bias_n = _gauge(
            "suggestion_seen_decisions",
            "People's decisions on suggested items, by whether the suggestion was seen before "
            f"the choice (seen=before_choice|not_before_choice), last {days} days.",
            seen,
        )
        bias_rate = _gauge(
            "suggestion_seen_followed_ratio",
            "Share of those that agreed with the suggestion.",
            seen,
        )
        bias_low = _gauge(
            "suggestion_seen_followed_wilson_low", "Wilson 95 % lower bound of that share.", seen
        )
        bias_high = _gauge(
            "suggestion_seen_followed_wilson_high", "Wilson 95 % upper bound of that share.", seen
        )
        q = ["queue"]
        gap = _gauge(
            "suggestion_bias_gap",
            "Automation-bias indicator: follow rate seen before the choice minus not.",
            q,
        )
        automatic = _gauge(
            "automatic_decisions_window", f"Automatic decisions, last {days} days.", q
        )
        auto_qa = _gauge(
            "automatic_qa_agreement_ratio",
            "Share of blind QA reviews of automatic decisions agreeing with the verdict.",
            q,
        )

        def add(family: dict[str, GaugeMetricFamily], labels: list[str], rate: Rate) -> None:
            family["n"].add_metric(labels, rate.n)
            if rate.value is not None:
                lo, hi = cast(tuple[float, float], rate.interval)
                family["rate"].add_metric(labels, rate.value)
                family["low"].add_metric(labels, lo)
                family["high"].add_metric(labels, hi)

        bands = {"n": band_n, "rate": band_rate, "low": band_low, "high": band_high}
        views = {"n": bias_n, "rate": bias_rate, "low": bias_low, "high": bias_high}
        for f in self.figures.queues:
            for b in f.calibration:
                add(bands, [f.slug, b.label], b.followed)
            add(views, [f.slug, "before_choice"], f.bias.seen)
            add(views, [f.slug, "not_before_choice"], f.bias.unseen)
            if f.bias.gap is not None:
                gap.add_metric([f.slug], f.bias.gap)
            automatic.add_metric([f.slug], f.automatic)
            if f.automatic_qa.value is not None:
                auto_qa.add_metric([f.slug], f.automatic_qa.value)
        yield from (
            band_n, band_rate, band_low, band_high, bias_n, bias_rate, bias_low, bias_high, gap,
            automatic, auto_qa,
        )  # fmt: skip
