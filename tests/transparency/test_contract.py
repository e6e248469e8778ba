"""The statement-of-reasons contract: what the Transparency Database accepts and refuses."""

from __future__ import annotations

from typing import Any

import pytest

from queue_app.transparency import contract
from queue_app.transparency.contract import validate_batch, validate_statement
from tests.transparency.statements import (
    illegal_statement,
    incompatible_statement,
    minimal_statement,
)

ILLEGAL = contract.ILLEGAL
INCOMPATIBLE = contract.INCOMPATIBLE


def without(statement: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {key: value for key, value in statement.items() if key not in fields}


def assert_refused(statement: dict[str, Any], expected: dict[str, str]) -> None:
    """Assert exactly the fields of `expected` are refused, each with a reason holding its text."""
    errors = validate_statement(statement)
    assert set(errors) == set(expected), errors
    for field, fragment in expected.items():
        assert any(fragment in reason for reason in errors[field]), (field, errors[field])


# -- valid statements ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        illegal_statement(),
        incompatible_statement(),
        minimal_statement(),
        incompatible_statement(incompatible_content_illegal="Yes"),
        without(incompatible_statement(), "incompatible_content_illegal"),
        illegal_statement(content_id={"EAN-13": "4006381333931"}),
        illegal_statement(category_addition=["STATEMENT_CATEGORY_VIOLENCE"], account_type=None),
        illegal_statement(
            category_specification=["KEYWORD_OTHER"], category_specification_other="Doxxing"
        ),
        illegal_statement(
            decision_visibility=[
                "DECISION_VISIBILITY_OTHER",
                "DECISION_VISIBILITY_CONTENT_LABELLED",
            ],
            decision_visibility_other="Hidden from search",
        ),
        minimal_statement()
        | {
            "decision_monetary": "DECISION_MONETARY_OTHER",
            "decision_monetary_other": "Payout delayed 30 days",
        },
        minimal_statement()
        | {"content_type": ["CONTENT_TYPE_OTHER"], "content_type_other": "Live"},
        # Optional fields given as null, "" or [] count as absent.
        illegal_statement(territorial_scope=[], content_language=None, category_addition=None),
        illegal_statement(decision_ground_reference_url="", end_date_visibility_restriction=None),
        # Lengths and dates at their limits.
        illegal_statement(
            decision_facts="x" * 5000,
            illegal_content_legal_ground="g" * 500,
            illegal_content_explanation="e" * 2000,
            puid="P" * 500,
            content_date="2000-01-01",
            application_date="2038-01-01",
            end_date_visibility_restriction="2038-01-01",
        ),
        illegal_statement(puid="Az09_-"),
    ],
    ids=lambda statement: statement["puid"][:20] + "/" + str(len(statement)),
)
def test_it_accepts_valid_statements(statement: dict[str, Any]) -> None:
    assert validate_statement(statement) == {}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decision_visibility", ["DECISION_VISIBILITY_CONTENT_DEMOTED"]),
        ("decision_monetary", "DECISION_MONETARY_TERMINATION"),
        ("decision_provision", "DECISION_PROVISION_PARTIAL_SUSPENSION"),
        ("decision_account", "DECISION_ACCOUNT_TERMINATED"),
    ],
)
def test_any_one_restriction_kind_is_enough(field: str, value: Any) -> None:
    statement = without(minimal_statement(), "decision_monetary") | {field: value}
    assert validate_statement(statement) == {}


def test_it_accepts_every_value_of_every_enumeration() -> None:
    base = incompatible_statement()
    for field, enumeration in contract.CHOICES.items():
        for value in contract.enumerations()[enumeration]:
            statement = base | {field: value}
            if field == "decision_ground" and value == ILLEGAL:
                statement = illegal_statement(**{field: value})
            if field == "source_type" and value != contract.VOLUNTARY:
                statement["source_identity"] = "A notifier"
            if field == "decision_monetary" and value == "DECISION_MONETARY_OTHER":
                statement["decision_monetary_other"] = "Other"
            assert validate_statement(statement) == {}, (field, value)
    for field, enumeration in contract.LISTS.items():
        values = list(contract.enumerations()[enumeration])
        statement = base | {field: values}
        companion = {
            "decision_visibility": "decision_visibility_other",
            "content_type": "content_type_other",
            "category_specification": "category_specification_other",
        }.get(field)
        if companion:
            statement[companion] = "Something else"
        assert validate_statement(statement) == {}, field


def test_the_enumerations_come_from_the_data_file() -> None:
    values = contract.enumerations()
    assert len(values["STATEMENT_CATEGORIES"]) == 16
    assert len(values["EUROPEAN_COUNTRY_CODES"]) == 30
    assert values["AUTOMATED_DETECTIONS"] == ("Yes", "No")
    assert "_source" not in values
    assert contract.labels("SOURCE_TYPES")["SOURCE_VOLUNTARY"] == "Own voluntary initiative"
    assert contract.labels("LANGUAGES")["EN"] == "EN"


# -- required fields -------------------------------------------------------------------------------


@pytest.mark.parametrize("field", contract.REQUIRED)
@pytest.mark.parametrize("absent", ["missing", None, ""])
def test_it_requires_the_always_required_fields(field: str, absent: Any) -> None:
    statement = without(illegal_statement(), field)
    if absent != "missing":
        statement[field] = absent
    assert_refused(statement, {field: "is required"})


def test_it_requires_a_non_empty_content_type_list() -> None:
    assert_refused(illegal_statement(content_type=[]), {"content_type": "is required"})


# -- the decision ground and its fields ------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        (
            without(illegal_statement(), "illegal_content_legal_ground"),
            {"illegal_content_legal_ground": f"is required when decision_ground is {ILLEGAL}"},
        ),
        (
            illegal_statement(illegal_content_explanation=""),
            {"illegal_content_explanation": f"is required when decision_ground is {ILLEGAL}"},
        ),
        (
            without(incompatible_statement(), "incompatible_content_ground"),
            {"incompatible_content_ground": f"is required when decision_ground is {INCOMPATIBLE}"},
        ),
        (
            without(incompatible_statement(), "incompatible_content_explanation"),
            {"incompatible_content_explanation": "is required when decision_ground is"},
        ),
        (
            illegal_statement(incompatible_content_ground="ToS 4"),
            {"incompatible_content_ground": f"must be absent when decision_ground is {ILLEGAL}"},
        ),
        (
            illegal_statement(incompatible_content_explanation="Spam"),
            {"incompatible_content_explanation": "must be absent"},
        ),
        (
            illegal_statement(incompatible_content_illegal="No"),
            {"incompatible_content_illegal": "must be absent"},
        ),
        (
            incompatible_statement(illegal_content_legal_ground="Law 1"),
            {
                "illegal_content_legal_ground": "must be absent when decision_ground is "
                + INCOMPATIBLE
            },
        ),
        (
            incompatible_statement(illegal_content_explanation="Because"),
            {"illegal_content_explanation": "must be absent"},
        ),
        (
            incompatible_statement(incompatible_content_illegal="yes"),
            {"incompatible_content_illegal": "must be one of Yes, No; got 'yes'"},
        ),
        (
            # An unknown ground is refused once; which explanation fields belong is then unknown.
            illegal_statement(decision_ground="DECISION_GROUND_OTHER"),
            {"decision_ground": "must be one of DECISION_GROUND_ILLEGAL_CONTENT, DECISION_GROUND_"},
        ),
    ],
)
def test_the_decision_ground_decides_its_fields(
    statement: dict[str, Any], expected: dict[str, str]
) -> None:
    assert_refused(statement, expected)


# -- at least one restriction ----------------------------------------------------------------------


@pytest.mark.parametrize("empty", ["missing", None, [], ""])
def test_it_requires_at_least_one_restriction(empty: Any) -> None:
    statement = without(illegal_statement(), "decision_visibility")
    if empty != "missing":
        statement["decision_visibility"] = empty
    reason = "at least one of decision_visibility, decision_monetary"
    expected = dict.fromkeys(contract.RESTRICTIONS, reason)
    if empty == "":
        expected["decision_visibility"] = "must be a list of values"
    assert_refused(statement, expected)


# -- enumerated values and lists -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("category", "STATEMENT_CATEGORY_SPAM", "one of the 16 values of STATEMENT_CATEGORIES"),
        ("decision_monetary", "SUSPENSION", "got 'SUSPENSION'"),
        ("decision_provision", "DECISION_PROVISION_PAUSED", "DECISION_PROVISION_TOTAL_TERMINATION"),
        ("decision_account", "DECISION_ACCOUNT_BANNED", "DECISION_ACCOUNT_SUSPENDED"),
        ("account_type", "ACCOUNT_TYPE_ROBOT", "ACCOUNT_TYPE_BUSINESS"),
        ("source_type", "SOURCE_POLICE", "SOURCE_TRUSTED_FLAGGER"),
        ("automated_detection", True, "must be one of Yes, No; got True"),
        ("automated_detection", "yes", "got 'yes'"),
        ("automated_decision", "Fully automated", "AUTOMATED_DECISION_FULLY"),
        ("content_language", "de", "LANGUAGES"),
        ("content_language", "DEU", "got 'DEU'"),
        ("category", 7, "got 7"),
    ],
)
def test_it_refuses_values_outside_an_enumeration(field: str, value: Any, fragment: str) -> None:
    assert_refused(illegal_statement(**{field: value}), {field: fragment})


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("territorial_scope", ["DE", "US"], "not allowed: 'US'"),
        ("territorial_scope", ["GB"], "EUROPEAN_COUNTRY_CODES"),
        ("territorial_scope", "DE", "must be a list of values"),
        ("territorial_scope", ["DE", "DE"], "must not list a value twice; repeated: DE"),
        ("content_type", ["CONTENT_TYPE_TEXT", "CONTENT_TYPE_PODCAST"], "'CONTENT_TYPE_PODCAST'"),
        ("content_type", "CONTENT_TYPE_TEXT", "must be a list of values"),
        ("category_addition", ["STATEMENT_CATEGORY_VIOLENCE", None], "not allowed: None"),
        ("category_specification", ["KEYWORD_SPAM"], "KEYWORDS"),
        (
            "decision_visibility",
            ["DECISION_VISIBILITY_CONTENT_HIDDEN"],
            "DECISION_VISIBILITY_OTHER",
        ),
        ("decision_visibility", {"a": 1}, "not dict"),
    ],
)
def test_it_refuses_bad_list_fields(field: str, value: Any, fragment: str) -> None:
    assert_refused(illegal_statement(**{field: value}), {field: fragment})


# -- lengths of free text --------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "limit"), sorted(contract.TEXT_LIMITS.items()))
def test_it_refuses_text_over_its_limit(field: str, limit: int) -> None:
    statement = illegal_statement(**{field: "é" * (limit + 1)})
    # Put the field where it belongs, so only its length is wrong.
    if field.startswith("incompatible"):
        statement = incompatible_statement(**{field: "é" * (limit + 1)})
    companions = {
        "category_specification_other": {"category_specification": ["KEYWORD_OTHER"]},
        "decision_visibility_other": {"decision_visibility": ["DECISION_VISIBILITY_OTHER"]},
        "decision_monetary_other": {"decision_monetary": "DECISION_MONETARY_OTHER"},
        "content_type_other": {"content_type": ["CONTENT_TYPE_OTHER"]},
    }
    statement.update(companions.get(field, {}))
    if field == "source_identity":
        statement["source_type"] = "SOURCE_ARTICLE_16"
    assert_refused(statement, {field: f"must be at most {limit} characters (it has {limit + 1})"})


@pytest.mark.parametrize("field", ["decision_facts", "illegal_content_explanation"])
def test_it_refuses_text_that_is_not_text(field: str) -> None:
    assert_refused(illegal_statement(**{field: ["a", "b"]}), {field: "must be text, not list"})


# -- "other" choices and their free-text companions ------------------------------------------------


@pytest.mark.parametrize(("field", "other_value", "companion"), contract.OTHER_COMPANIONS)
def test_an_other_choice_needs_its_companion_and_only_then(
    field: str, other_value: str, companion: str
) -> None:
    value: Any = [other_value] if field in contract.LISTS else other_value
    statement = illegal_statement(**{field: value})
    assert_refused(statement, {companion: f"is required when {field} is {other_value}"})
    assert validate_statement(statement | {companion: "Said here"}) == {}
    assert_refused(
        illegal_statement(**{companion: "Said here"}),
        {companion: f"must be absent unless {field} is {other_value}"},
    )


@pytest.mark.parametrize("source_type", ["SOURCE_ARTICLE_16", "SOURCE_TRUSTED_FLAGGER"])
def test_a_notice_may_name_its_source(source_type: str) -> None:
    assert validate_statement(illegal_statement(source_type=source_type)) == {}
    assert (
        validate_statement(without(illegal_statement(source_type=source_type), "source_identity"))
        == {}
    )


def test_own_initiative_names_no_source() -> None:
    assert_refused(
        illegal_statement(source_type="SOURCE_VOLUNTARY"),
        {"source_identity": "must be absent when source_type is SOURCE_VOLUNTARY"},
    )


# -- dates -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("content_date", "30/11/2026", "must be a date written YYYY-MM-DD"),
        ("content_date", "2026-11-30T10:00:00", "YYYY-MM-DD"),
        ("content_date", "2026-2-3", "YYYY-MM-DD"),
        ("content_date", 20261130, "YYYY-MM-DD; got 20261130"),
        ("content_date", "2026-02-30", "must be a real calendar date"),
        ("content_date", "1999-12-31", "must be on or after 2000-01-01"),
        ("content_date", "2038-01-02", "must be on or before 2038-01-01"),
        ("application_date", "2019-12-31", "must be on or after 2020-01-01"),
        ("application_date", "2038-01-02", "must be on or before 2038-01-01"),
        ("end_date_visibility_restriction", "2038-02-01", "must be on or before 2038-01-01"),
        ("end_date_monetary_restriction", "2026-13-01", "must be a real calendar date"),
        ("end_date_service_restriction", "2026-11-30", "must not be before application_date"),
        ("end_date_account_restriction", "tomorrow", "YYYY-MM-DD"),
    ],
)
def test_it_refuses_bad_dates(field: str, value: Any, fragment: str) -> None:
    assert_refused(illegal_statement(**{field: value}), {field: fragment})


# -- the reference URL -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("example.org/terms", "must be an absolute http(s) URL"),
        ("ftp://example.org/terms", "http(s)"),
        ("javascript:alert(1)", "http(s)"),
        ("https:///terms", "http(s)"),
        ("https://example.org/our terms", "http(s)"),
        ("https://example.org/" + "t" * 481, "must be at most 500 characters (it has 501)"),
        ("http://[::1", "http(s)"),
        (42, "must be a URL as text, not int"),
    ],
)
def test_it_refuses_a_bad_reference_url(value: Any, fragment: str) -> None:
    assert_refused(
        illegal_statement(decision_ground_reference_url=value),
        {"decision_ground_reference_url": fragment},
    )


# -- the PUID --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("rc/q1/d1", "not allowed: '/'"),
        ("rc q1", "not allowed: ' '"),
        ("rc-q1\n", "not allowed: '\\n'"),
        ("décision", "not allowed: 'é'"),
        ("P" * 501, "must be at most 500 characters (it has 501)"),
        (12345, "must be text, not int"),
    ],
)
def test_it_refuses_a_bad_puid(value: Any, fragment: str) -> None:
    assert_refused(illegal_statement(puid=value), {"puid": fragment})


# -- the content identifier ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"EAN-13": "400638133393"}, "exactly 13 digits"),
        ({"EAN-13": 4006381333931}, "exactly 13 digits, as text"),
        ({"EAN-13": "400638133393X"}, "exactly 13 digits"),
        ({"ISBN": "9780306406157"}, 'must be {"EAN-13": "<13 digits>"}'),
        ({"EAN-13": "4006381333931", "ISBN": "1"}, "the only identifier"),
        ("4006381333931", 'must be {"EAN-13"'),
    ],
)
def test_it_refuses_a_bad_content_id(value: Any, fragment: str) -> None:
    assert_refused(illegal_statement(content_id=value), {"content_id": fragment})


# -- the shape of the statement --------------------------------------------------------------------


def test_it_refuses_fields_the_contract_does_not_name() -> None:
    assert_refused(
        illegal_statement(decision_fact="typo", uuid="x"),
        {"decision_fact": "is not a field", "uuid": "is not a field"},
    )


@pytest.mark.parametrize("value", [None, [], "statement"])
def test_it_refuses_a_statement_that_is_not_an_object(value: Any) -> None:
    assert validate_statement(value) == {"statement": ["must be a JSON object of fields"]}


def test_it_reports_every_broken_rule_at_once() -> None:
    statement = illegal_statement(
        category="NOPE", content_date="yesterday", puid="a b", decision_facts=""
    )
    errors = validate_statement(statement)
    assert set(errors) == {"category", "content_date", "puid", "decision_facts"}
    assert "category: must be one of the 16 values" in contract.describe(errors)


# -- part of a statement (a queue's mapping of a reason code) -------------------------------------


def test_part_of_a_statement_is_checked_for_what_it_gives() -> None:
    mapping = {
        "decision_ground": INCOMPATIBLE,
        "incompatible_content_ground": "Terms, section 4",
        "category": "STATEMENT_CATEGORY_SCAMS_AND_FRAUD",
        "category_specification": ["KEYWORD_PHISHING"],
        "decision_ground_reference_url": "https://example.org/terms#4",
    }
    assert contract.validate_partial(mapping) == {}
    ground_fields = contract.GROUND_REQUIRED[INCOMPATIBLE]
    assert contract.validate_partial(mapping, required=ground_fields) == {
        "incompatible_content_explanation": [f"is required when decision_ground is {INCOMPATIBLE}"]
    }
    wrong = mapping | {
        "category": "STATEMENT_CATEGORY_SPAM",
        "illegal_content_legal_ground": "Law 1",
        "decision_ground_reference_url": "terms#4",
        "category_specification_other": "Fake shop",
    }
    assert set(contract.validate_partial(wrong)) == {
        "category",
        "illegal_content_legal_ground",
        "decision_ground_reference_url",
        "category_specification_other",
    }
    assert contract.validate_partial("mapping") == {
        "statement": ["must be a JSON object of fields"]
    }


# -- batches ---------------------------------------------------------------------------------------


def test_a_batch_of_one_to_a_hundred_is_accepted() -> None:
    assert validate_batch([illegal_statement()]) == {}
    assert validate_batch([illegal_statement(f"p-{n}") for n in range(100)]) == {}


@pytest.mark.parametrize(
    ("statements", "fragment"),
    [
        ([], "must hold at least 1 statement"),
        ([illegal_statement(f"p-{n}") for n in range(101)], "at most 100 statements (it has 101)"),
        ({"puid": "p"}, "must be a list of statements"),
        (None, "must be a list of statements"),
    ],
)
def test_a_batch_has_one_to_a_hundred_statements(statements: Any, fragment: str) -> None:
    errors = validate_batch(statements)
    assert list(errors) == ["statements"]
    assert fragment in errors["statements"][0]


def test_a_batch_reports_field_errors_by_position() -> None:
    errors = validate_batch(
        [illegal_statement("p-0"), illegal_statement("p-1", category="X"), "oops"]
    )
    assert set(errors) == {"statements.1.category", "statements.2.statement"}


def test_a_batch_refuses_a_puid_repeated_inside_it() -> None:
    statements = [illegal_statement("a"), incompatible_statement("b"), minimal_statement("a")]
    assert contract.duplicate_puids(statements) == ["a"]
    errors = validate_batch(statements)
    assert list(errors) == ["puid"]
    assert "unique within the call; repeated: a" in errors["puid"][0]
