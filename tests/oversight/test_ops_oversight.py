"""The oversight figures on /ops/, in /metrics and in the export, and who may read the export."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.oversight.conftest import decided, many, qa_review

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(db):
    from django.contrib.auth.models import User

    return User.objects.create_user(username="olga", password="pw-olga", is_staff=True)


@pytest.fixture
def history(screen, alice, bob, robot, carol):
    """A small history with a gap: alice sees the suggestion (4 of 5 agree), bob does not (1 of
    5); 2 automatic decisions, one checked by QA, which agreed."""
    many(screen, alice, 5, followed=4, view="shown", confidence="0.60")
    many(screen, bob, 5, followed=1, view="not_shown", confidence="0.60")
    auto = decided(screen, robot, suggested="approve", verdict="approve", view="automatic",
                   confidence="0.95")  # fmt: skip
    decided(screen, robot, suggested="approve", verdict="approve", view="automatic",
            confidence="0.99")  # fmt: skip
    qa_review(auto, carol, verdict="approve")


# -- /ops/ ----------------------------------------------------------------------------------------


def oversight_section(html: str) -> ET.Element:
    """The section as an element tree (the template writes well-formed markup)."""
    start = html.index('<section class="ops-dead ops-oversight"')
    depth, pos = 0, start
    for tag in re.finditer(r"<(/?)section\b", html[start:]):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            pos = start + tag.end()
            break
    return ET.fromstring(html[start : html.index(">", pos) + 1])


def text(element: ET.Element) -> str:
    return "".join(element.itertext()).strip()


def cells(row: ET.Element) -> list[str]:
    return [text(c) for c in row if c.tag in ("th", "td")]


def test_the_dashboard_explains_each_figure_in_tables_a_screen_reader_can_read(
    client, operator, history
):
    client.force_login(operator)

    html = client.get("/ops/").content.decode()

    section = oversight_section(html)
    assert text(section.find("h2")) == "Oversight of machine suggestions"
    queue = section.find(".//section[@id='oversight-screen']")
    tables = queue.findall(".//table")
    assert [text(t.find("caption")) for t in tables] == [
        "Calibration: how often people agreed with the suggestion, by its confidence",
        "Automation bias: agreement with the suggestion when it was seen before the choice, "
        "and when not",
        "Automatic decisions checked by blind QA",
        "Each reviewer's agreement with the suggestion beside the team's",
    ]
    for table in tables:
        assert all(th.get("scope") in {"col", "row"} for th in table.iter("th"))
    # Every table (in its scroll box on a narrow screen) is followed by its one-sentence
    # explanation.
    kinds = [
        (c.tag, c.get("class"))
        for c in [w.find("table") if w.get("class") == "rc-table-wrap" else w for w in queue]
        if c is not None and c.tag in ("table", "p")
    ]
    assert [tag for tag, _ in kinds] == ["table", "p"] * 4
    assert {cls for tag, cls in kinds if tag == "p"} == {"help"}
    band = queue.find(".//tr[@data-band='0.50 to 0.70']")
    assert cells(band) == [
        "0.50 to 0.70",
        "10",
        "50%",
        "24% to 76%",
        "50%",
        "24% to 76%",
    ]  # fmt: skip (5 of 10: Wilson 0.2366 to 0.7634)
    seen = cells(queue.find(".//tr[@data-bias='seen']"))
    assert seen[1:] == ["5", "80%", "38% to 96%"]  # 4 of 5
    unseen = cells(queue.find(".//tr[@data-bias='unseen']"))
    assert unseen[1:] == ["5", "20%", "4% to 62%"]  # 1 of 5
    gap = cells(queue.find(".//tr[@data-bias='gap']"))
    assert gap[2] == "+60 pts"
    automatic = cells(queue.find(".//tr[@data-figure='automatic-qa']"))
    assert automatic == ["2", "1", "100%", "21% to 100%"]  # 1 of 1: Wilson 0.2065 to 1
    rows = {
        tr.get("data-reviewer"): cells(tr)[2] for tr in queue.iter("tr") if tr.get("data-reviewer")
    }
    assert rows == {"alice": "80%", "bob": "20%", "*team*": "50%"}
    assert section.find(".//a[@id='oversight-csv']").get("href") == "/ops/oversight.csv"


def test_the_dashboard_says_when_there_is_nothing_to_show(client, operator, screen):
    client.force_login(operator)

    html = client.get("/ops/").content.decode()

    assert "No decisions on items with a machine suggestion in the last 90 days." in html


# -- /metrics -------------------------------------------------------------------------------------


def test_metrics_carry_the_calibration_and_bias_gauges_per_queue(client, history):
    body = client.get("/metrics").content.decode()

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }

    def value(name: str, **labels: str) -> float:
        return samples[(f"reviewconsole_{name}", tuple(sorted(labels.items())))]

    assert value("suggestion_band_decisions", queue="screen", band="0.50-0.70") == 10
    assert value("suggestion_band_followed_ratio", queue="screen", band="0.50-0.70") == 0.5
    assert value(
        "suggestion_band_followed_wilson_low", queue="screen", band="0.50-0.70"
    ) == pytest.approx(0.2366, abs=5e-5)
    assert value("suggestion_band_decisions", queue="screen", band="0.95-1.00") == 0
    # No made-up rate for an empty band.
    assert ("reviewconsole_suggestion_band_followed_ratio",
            (("band", "0.95-1.00"), ("queue", "screen"))) not in samples  # fmt: skip
    assert value("suggestion_seen_followed_ratio", queue="screen", seen="before_choice") == 0.8
    assert value("suggestion_seen_followed_ratio", queue="screen", seen="not_before_choice") == (
        pytest.approx(0.2)
    )
    assert value("suggestion_bias_gap", queue="screen") == pytest.approx(0.6)
    assert value("automatic_decisions_window", queue="screen") == 2
    assert value("automatic_qa_agreement_ratio", queue="screen") == 1.0


# -- the export -----------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_sign_in(client, settings):
    settings.LOGIN_URL = "/accounts/login/"

    response = client.get("/ops/oversight.csv")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/ops/oversight.csv"


def test_reviewers_who_are_not_staff_may_not_export(client, alice, history):
    client.force_login(alice)

    assert client.get("/ops/oversight.csv").status_code == 403
    assert client.get("/ops/oversight.json").status_code == 403


def test_only_csv_and_json_are_offered(client, operator):
    client.force_login(operator)

    assert client.get("/ops/oversight.xml").status_code == 404


def test_staff_export_the_figures_as_csv(client, operator, history):
    client.force_login(operator)

    response = client.get("/ops/oversight.csv")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="oversight-')
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == ["queue", "figure", "group", "n", "hits", "rate", "low", "high"]
    by_key = {(r["queue"], r["figure"], r["group"]): r for r in rows}
    assert by_key[("screen", "followed", "0.50-0.70")] == {
        "queue": "screen", "figure": "followed", "group": "0.50-0.70", "n": "10", "hits": "5",
        "rate": "0.5000", "low": "0.2366", "high": "0.7634",
    }  # fmt: skip
    assert by_key[("screen", "followed", "0.80-0.90")]["rate"] == ""  # no sample, no rate
    assert by_key[("screen", "bias_gap", "seen_minus_not_seen")]["rate"] == "0.6000"
    assert by_key[("screen", "automatic_decisions", "")]["n"] == "2"
    assert by_key[("screen", "automatic_qa_agreement", "qa_reviewed")]["hits"] == "1"
    assert by_key[("screen", "reviewer_followed", "bob")]["rate"] == "0.2000"
    assert by_key[("*", "team_followed", "people")]["rate"] == "0.5000"


def test_staff_export_the_figures_as_json(client, operator, history):
    client.force_login(operator)

    response = client.get("/ops/oversight.json")

    assert response["Content-Type"] == "application/json; charset=utf-8"
    doc = json.loads(response.content)
    assert doc["window_days"] == 90
    assert doc["bands"][0] == "0.00-0.50"
    [screen] = doc["queues"]
    assert screen["calibration"][1]["followed"]["n"] == 10
    assert screen["calibration"][1]["overridden"]["hits"] == 5
    assert screen["bias"]["seen_before_choice"]["rate"] == 0.8
    assert screen["bias"]["gap"] == pytest.approx(0.6)
    assert screen["automatic"] == {
        "decisions": 2,
        "qa_agreement": {"n": 1, "hits": 1, "rate": 1.0, "low": pytest.approx(0.2065, abs=5e-5),
                         "high": 1.0},
    }  # fmt: skip
    assert [r["reviewer"] for r in screen["reviewers"]] == ["alice", "bob"]
    assert doc["all"]["queue"] == "*"


# -- manage.py export_oversight -------------------------------------------------------------------


def test_the_command_writes_the_same_figures(history, tmp_path, capsys):
    from django.core.management import call_command

    call_command("export_oversight", "--format", "json", "--output", str(tmp_path / "o.json"))
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["queues"][0]["bias"]["not_seen_before_choice"]["hits"] == 1

    call_command("export_oversight")  # CSV on standard output
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    by_key = {(r["queue"], r["figure"], r["group"]): r for r in rows}
    assert by_key[("screen", "bias_followed", "seen_before_choice")]["rate"] == "0.8000"


def test_the_command_refuses_a_window_of_no_days(db):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--days must be at least 1"):
        call_command("export_oversight", "--days", "0")


def test_a_shorter_window_leaves_older_decisions_out(screen, alice, tmp_path):
    from django.core.management import call_command

    many(screen, alice, 2, followed=2, view="shown")  # a day ago
    decided(screen, alice, suggested="approve", verdict="reject", days_ago=10)

    call_command("export_oversight", "--format", "json", "--days", "5",
                 "--output", str(tmp_path / "o.json"))  # fmt: skip

    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["window_days"] == 5
    assert doc["queues"][0]["team_followed"]["n"] == 2
