"""Write db/statements.sql: the final text of every statement, with what it does.

    python -m queue_app.db.render      (make sql)

The statements are composed from fragments in Python; this file is where each one can be read
whole. tests/db/test_statements_file.py fails when the committed file and the code disagree.
"""

from __future__ import annotations

from pathlib import Path

from queue_app.db.statements import MODULES, module_statements

STATEMENTS_FILE = Path(__file__).with_name("statements.sql")

HEADER = """\
-- Every named statement Review Console runs, as sent to PostgreSQL (psycopg's %(name)s
-- placeholders; %% is a literal %). Written by `make sql` from queue_app/db/statements/:
-- edit the Python, not this file.
"""


def render() -> str:
    """Return the text of db/statements.sql as the code defines it now."""
    parts = [HEADER]
    for module in MODULES:
        section = module.__name__.rsplit(".", 1)[-1]
        parts.append(f"\n-- {'=' * 95}\n-- {section}: {first_line(module.__doc__ or '')}\n")
        for name, text in module_statements(module).items():
            purpose = module.PURPOSE.get(name, "")
            parts.append(f"\n-- name: {name}\n-- {purpose}\n{text.strip()};\n")
    return "".join(parts)


def first_line(doc: str) -> str:
    """Return a docstring's first sentence, on one line."""
    text = " ".join(doc.split())
    return text.split(". ", 1)[0].removesuffix(".") + "."


def main() -> None:
    """Write db/statements.sql."""
    STATEMENTS_FILE.write_text(render())
    print(f"wrote {STATEMENTS_FILE}")


if __name__ == "__main__":
    main()
