"""db/statements.sql is what the code sends, and every statement says what it does."""

from __future__ import annotations

import difflib

from queue_app.db import render
from queue_app.db.statements import MODULES, module_statements


def test_the_committed_file_matches_the_code():
    committed = render.STATEMENTS_FILE.read_text()
    rendered = render.render()
    if committed != rendered:
        diff = difflib.unified_diff(
            committed.splitlines(),
            rendered.splitlines(),
            "db/statements.sql (committed)",
            "db/statements.sql (rendered from the code)",
            lineterm="",
        )
        shown = "\n".join(list(diff)[:40])
        raise AssertionError(f"db/statements.sql is out of date: run `make sql`\n{shown}")


def test_every_statement_has_a_one_line_purpose():
    missing = [
        f"{module.__name__}.{name}"
        for module in MODULES
        for name in module_statements(module)
        if not module.PURPOSE.get(name, "").strip()
    ]
    assert not missing, f"add a line to the module's PURPOSE for: {missing}"


def test_every_purpose_names_a_statement_and_fits_on_a_line():
    for module in MODULES:
        statements = module_statements(module)
        for name, purpose in module.PURPOSE.items():
            assert name in statements, f"{module.__name__}.PURPOSE names no statement {name}"
            assert "\n" not in purpose and len(purpose) <= 96, f"{name}: one short line"
