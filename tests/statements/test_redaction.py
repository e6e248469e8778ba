"""No personal data from the item's evidence reaches the statement, however the note quotes it."""

from __future__ import annotations

import pytest

from queue_app.apply import apply_batch
from queue_app.models import StatementOfReasons
from queue_app.transparency.redaction import REDACTED, evidence_values, redact
from tests.statements.conftest import decide

pytestmark = pytest.mark.django_db

EVIDENCE = {
    "seller": {
        "name": "Jane Doe",
        "email": "jane.doe@example.com",
        "phone": "+49 170 1234567",
        "account_id": "ACC-99812345",
        "iban": "DE89 3704 0044 0532 0130 00",
        "profile": "https://social.example/u/janedoe-77",
    },
    "buyer": ["Kwame Mensah", 5512904],
    "text": "Limited offer: write to Jane",
}
NOTE = (
    "Jane Doe (jane.doe@example.com, +49 170 1234567) asked Kwame Mensah for the password of "
    "account ACC-99812345 and a payment to DE89 3704 0044 0532 0130 00, see "
    "https://social.example/u/janedoe-77 ; MENSAH's customer number is 5512904. "
    "She also wrote from j.doe@mail.example and 0170-7654321, IBAN FR7630006000011234567890189."
)
#: Every value, and every part a note might quote on its own.
MUST_NOT_APPEAR = [
    "Jane",
    "Doe",
    "jane.doe",
    "example.com",
    "1234567",
    "ACC-99812345",
    "99812345",
    "3704",
    "0532",
    "janedoe",
    "Kwame",
    "Mensah",
    "5512904",
    "cust-884213",
    "884213",
    "j.doe@mail.example",
    "7654321",
    "FR7630006000011234567890189",
]


def test_none_of_the_evidence_reaches_the_built_statement(posts, alice):
    decide(
        posts,
        alice,
        subject="Listing by Jane Doe",
        subject_key="cust-884213",
        payload=EVIDENCE,
        note=NOTE,
    )
    apply_batch()
    statement = StatementOfReasons.objects.get()
    assert statement.errors == {}
    sent = statement.body.casefold()
    leaked = [value for value in MUST_NOT_APPEAR if value.casefold() in sent]
    assert leaked == []
    # The facts still say what happened.
    facts = statement.statement["decision_facts"]
    assert "asked" in facts and "for the password of account" in facts, facts
    assert REDACTED in facts


def test_what_looks_personal_is_removed_even_when_the_item_does_not_hold_it():
    text = redact(
        "Mail a.b@x.org, call +44 20 7946 0958, pay GB33BUKB20201555555555, "
        "see https://x.test/users/alice?ref=1, handle @alice_b, card 4111111111111111.",
        evidence=[],
    )
    for value in ("a.b@x.org", "7946", "GB33", "/users/alice", "@alice_b", "4111"):
        assert value not in text
    assert "https://x.test/" in text  # the host alone says nothing about anybody


def test_a_short_name_is_removed_as_a_word_not_from_inside_other_words():
    values = evidence_values(subject="Ann", subject_key=None, payload={"n": "Ann"})
    assert redact("Ann posted the annual report.", evidence=values) == (
        f"{REDACTED} posted the annual report."
    )
