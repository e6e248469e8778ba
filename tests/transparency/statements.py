"""Valid statements of reasons to start tests from, one per decision ground."""

from __future__ import annotations

from typing import Any


def illegal_statement(puid: str = "rc-q1-d1", **changes: Any) -> dict[str, Any]:
    """Return a valid statement on the illegal-content ground, with `changes` applied."""
    statement: dict[str, Any] = {
        "decision_ground": "DECISION_GROUND_ILLEGAL_CONTENT",
        "illegal_content_legal_ground": "Article 130 of the Criminal Code (incitement)",
        "illegal_content_explanation": "The post calls for violence against a protected group.",
        "category": "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH",
        "category_specification": ["KEYWORD_HATE_SPEECH"],
        "decision_visibility": ["DECISION_VISIBILITY_CONTENT_REMOVED"],
        "content_type": ["CONTENT_TYPE_TEXT"],
        "content_date": "2026-11-30",
        "application_date": "2026-12-01",
        "decision_facts": "A reviewer found the post incites hatred; it was removed.",
        "source_type": "SOURCE_ARTICLE_16",
        "source_identity": "Notifier category: individual",
        "automated_detection": "No",
        "automated_decision": "AUTOMATED_DECISION_NOT_AUTOMATED",
        "territorial_scope": ["DE", "AT"],
        "content_language": "DE",
        "decision_ground_reference_url": "https://example.org/law/130",
        "puid": puid,
    }
    statement.update(changes)
    return statement


def incompatible_statement(puid: str = "rc-q1-d2", **changes: Any) -> dict[str, Any]:
    """Return a valid statement on the terms-and-conditions ground, with `changes` applied."""
    statement: dict[str, Any] = {
        "decision_ground": "DECISION_GROUND_INCOMPATIBLE_CONTENT",
        "incompatible_content_ground": "Terms of service, section 4.2 (spam)",
        "incompatible_content_explanation": "Repeated unsolicited advertising.",
        "incompatible_content_illegal": "No",
        "category": "STATEMENT_CATEGORY_SCAMS_AND_FRAUD",
        "decision_account": "DECISION_ACCOUNT_SUSPENDED",
        "end_date_account_restriction": "2027-01-01",
        "account_type": "ACCOUNT_TYPE_PRIVATE",
        "content_type": ["CONTENT_TYPE_TEXT", "CONTENT_TYPE_IMAGE"],
        "content_date": "2026-11-29",
        "application_date": "2026-12-01",
        "decision_facts": "The account posted the same advertisement 40 times in an hour.",
        "source_type": "SOURCE_VOLUNTARY",
        "automated_detection": "Yes",
        "automated_decision": "AUTOMATED_DECISION_PARTIALLY",
        "puid": puid,
    }
    statement.update(changes)
    return statement


def minimal_statement(puid: str = "rc-q1-d3") -> dict[str, Any]:
    """Return a valid statement holding only the required fields (a monetary restriction)."""
    return {
        "decision_ground": "DECISION_GROUND_INCOMPATIBLE_CONTENT",
        "incompatible_content_ground": "Seller terms, section 2",
        "incompatible_content_explanation": "Payouts held pending identity checks.",
        "category": "STATEMENT_CATEGORY_CONSUMER_INFORMATION",
        "decision_monetary": "DECISION_MONETARY_SUSPENSION",
        "content_type": ["CONTENT_TYPE_PRODUCT"],
        "content_date": "2000-01-01",
        "application_date": "2020-01-01",
        "decision_facts": "Listings misdescribed the goods.",
        "source_type": "SOURCE_TRUSTED_FLAGGER",
        "automated_detection": "No",
        "automated_decision": "AUTOMATED_DECISION_FULLY",
        "puid": puid,
    }
