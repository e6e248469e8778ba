"""The notice in German, from the catalogue in locale/de, and the catalogue compiled as written."""

from __future__ import annotations

import ast
import gettext
import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

from queue_app import delivery
from tests.delivery.conftest import built

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "de" / "LC_MESSAGES"
TEMPLATES = Path(settings.BASE_DIR) / "templates" / "notices"


def _po_entries(path: Path) -> dict[str, str]:
    """msgid -> msgstr of a .po file (the header entry left out)."""
    entries: dict[str, str] = {}
    key: str | None = None
    parts: dict[str, list[str]] = {}
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        match = re.match(r"^(msgid|msgstr) (\".*\")$", line)
        if match:
            key = match.group(1)
            parts[key] = [ast.literal_eval(match.group(2))]
        elif line.startswith('"') and key:
            parts[key].append(ast.literal_eval(line))
        elif not line.strip() and parts:
            msgid, msgstr = "".join(parts.get("msgid", [])), "".join(parts.get("msgstr", []))
            if msgid:
                entries[msgid] = msgstr
            parts, key = {}, None
    return entries


def test_every_german_entry_is_translated_and_compiled_as_written():
    entries = _po_entries(CATALOGUE / "django.po")
    assert len(entries) >= 30
    untranslated = [msgid for msgid, msgstr in entries.items() if not msgstr]
    assert untranslated == []
    # The committed django.mo says what django.po says: msgfmt was run after the last edit.
    with (CATALOGUE / "django.mo").open("rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)
    assert {msgid: catalogue.gettext(msgid) for msgid in entries} == entries


def test_every_phrase_of_the_notice_templates_is_in_the_catalogue():
    entries = _po_entries(CATALOGUE / "django.po")
    for template in TEMPLATES.iterdir():
        text = template.read_text(encoding="utf-8")
        for phrase in re.findall(r'{% translate "([^"]+)" %}', text):
            assert phrase in entries, (template.name, phrase)
        for block in re.findall(r"{% blocktranslate[^%]*%}(.*?){% endblocktranslate %}", text):
            msgid = re.sub(r"{{ (\w+) }}", r"%(\1)s", block)
            assert msgid in entries, (template.name, msgid)
    for word in delivery.NOTICE_WORDS:
        assert word in entries


@pytest.mark.django_db
def test_a_notice_is_rendered_in_german(notifying_posts, platform, alice, settings):
    settings.REVIEW_NOTICE_LANGUAGE = "de"
    built(notifying_posts, alice, note="Asked for a bank password")
    assert delivery.deliver_notices() == 1
    sent = json.loads(platform.requests[0][1])
    assert sent["language"] == "de"
    text, html = sent["text"], sent["html"]
    assert text.startswith(f"Begründung {sent['puid']}: Wir haben Post k0 beschränkt")
    assert "Was wir beschränkt haben: Inhalt entfernt" in text
    assert "Wo: DE, FR" in text
    assert "Bis: ohne Enddatum (unbefristet)" in text
    assert "Automatisierte Erkennung: Nein" in text
    assert "Automatisierte Entscheidung: Nicht automatisiert" in text
    assert f"Sie können bis zum {sent['appeal']['until']} über unser" in text
    assert "Außergerichtliche Streitbeilegung: Sie können die Streitigkeit" in text
    assert "Statement of reasons" not in text and "What we restricted" not in text
    assert '<article lang="de">' in html
    assert "<dt>Tatsachen und Umstände</dt>" in html
    # The JSON stays in the contract's values, whatever the language.
    assert sent["restriction"] == {"decision_visibility": ["DECISION_VISIBILITY_CONTENT_REMOVED"]}


@pytest.mark.django_db
def test_without_a_notice_language_it_is_english_and_the_active_one_is_left_alone(
    notifying_posts, platform, alice
):
    built(notifying_posts, alice)
    with translation.override("en"):
        assert delivery.deliver_notices() == 1
        assert translation.get_language() == "en"
    sent = json.loads(platform.requests[0][1])
    assert sent["language"] == "en"
    assert "What we restricted: Content removed" in sent["text"]
    assert "Automated detection: No" in sent["text"]
