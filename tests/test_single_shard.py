"""Every hot-path statement stays on one shard when the schema is distributed by queue_id.

docs/scaling.md ("1,000x today") distributes the item, decision, outbox and event tables by
queue_id on Citus. A statement is routed to one shard only if each of its reads and writes of a
distributed table pins queue_id to a value it is given. This test parses every statement named
in a HOT_PATH with PostgreSQL's own parser (pglast wraps libpg_query) and checks exactly that,
so dropping a queue_id predicate from the claim, the renew, the release or the fenced close
fails here, not on the day the schema moves.
"""

from __future__ import annotations

import re

import pytest
from pglast import ast, parse_sql
from pglast.enums import BoolExprType

from queue_app.db import statements
from queue_app.db.statements import lanes as lanes_sql
from queue_app.db.statements import leases as leases_sql
from queue_app.db.statements import outbox as outbox_sql

# Inserts into these are routed by the row they insert; item events and lane outcomes have no
# queue column yet and gain one with the move (docs/scaling.md, "1,000x today").
INSERT_WITHOUT_QUEUE_YET = {"queue_app_itemevent", "queue_app_laneoutcome"}

# Every statement on the two hot paths: a reviewer's (statements.HOT_PATH) and a second
# person's (lanes_sql.HOT_PATH).
STATEMENTS = statements.all_statements()
HOT_PATH = [*statements.HOT_PATH, *lanes_sql.HOT_PATH]


def _parse(statement: str) -> ast.Node:
    numbers: dict[str, int] = {}

    def param(match: re.Match[str]) -> str:
        return f"${numbers.setdefault(match.group(1), len(numbers) + 1)}"

    text = re.sub(r"%\((\w+)\)s", param, statement).replace("%%", "%")
    (raw,) = parse_sql(text)
    return raw.stmt


def _walk(node: object):
    """Yield every AST node below node (node included), depth first."""
    if isinstance(node, ast.Node):
        yield node
        for name in node.__slots__:
            yield from _walk(getattr(node, name))
    elif isinstance(node, tuple | list):
        for child in node:
            yield from _walk(child)


def _conjuncts(expr: object) -> list[object]:
    """The top-level AND terms of a condition (an OR pins nothing)."""
    if isinstance(expr, ast.BoolExpr) and expr.boolop == BoolExprType.AND_EXPR:
        return [t for arg in expr.args for t in _conjuncts(arg)]
    return [] if expr is None else [expr]


def _is_param(expr: object) -> bool:
    if isinstance(expr, ast.TypeCast):
        return _is_param(expr.arg)
    return isinstance(expr, ast.ParamRef)


def _names_queue_of(column: object, ref: str) -> bool:
    if not isinstance(column, ast.ColumnRef):
        return False
    fields = [f.sval for f in column.fields if isinstance(f, ast.String)]
    return fields in (["queue_id"], [ref, "queue_id"])


def _pins_queue(where: object, ref: str) -> bool:
    for term in _conjuncts(where):
        if (
            isinstance(term, ast.A_Expr)
            and [n.sval for n in term.name] == ["="]
            and (
                (_names_queue_of(term.lexpr, ref) and _is_param(term.rexpr))
                or (_names_queue_of(term.rexpr, ref) and _is_param(term.lexpr))
            )
        ):
            return True
    return False


def _tables_read_or_written(stmt: ast.Node) -> list[ast.RangeVar]:
    """The distributed tables a SELECT, UPDATE or DELETE scans itself (not in subqueries)."""
    found = []
    items = list(getattr(stmt, "fromClause", None) or ())
    if isinstance(stmt, ast.UpdateStmt | ast.DeleteStmt):
        items.append(stmt.relation)
    while items:
        item = items.pop()
        if isinstance(item, ast.JoinExpr):
            items += [item.larg, item.rarg]
        elif isinstance(item, ast.RangeVar) and item.relname in statements.DISTRIBUTED_TABLES:
            found.append(item)
    return found


def shard_problems(statement: str) -> list[str]:
    """What in the statement would reach more than one shard; empty when it stays on one."""
    problems = []
    for node in _walk(_parse(statement)):
        if isinstance(node, ast.SelectStmt | ast.UpdateStmt | ast.DeleteStmt):
            for table in _tables_read_or_written(node):
                ref = table.alias.aliasname if table.alias else table.relname
                if not _pins_queue(node.whereClause, ref):
                    problems.append(f"{table.relname} AS {ref}: no queue_id = <value> in WHERE")
        elif (
            isinstance(node, ast.InsertStmt)
            and node.relation.relname in statements.DISTRIBUTED_TABLES
        ):
            columns = [c.name for c in node.cols or ()]
            if "queue_id" not in columns and node.relation.relname not in INSERT_WITHOUT_QUEUE_YET:
                problems.append(f"INSERT INTO {node.relation.relname} without queue_id")
    return problems


@pytest.mark.parametrize("name", HOT_PATH)
def test_every_hot_path_statement_stays_on_one_shard(name):
    assert shard_problems(STATEMENTS[name]) == []


@pytest.mark.parametrize("name", HOT_PATH)
def test_every_hot_path_statement_touches_a_distributed_table_or_a_queue(name):
    # A sanity check on the checker: each statement it passes does name a queue.
    assert "%(queue_id)s" in STATEMENTS[name]


@pytest.mark.parametrize(
    ("name", "predicate"),
    [
        ("CLOSE_ITEM", "AND i.queue_id = %(queue_id)s "),
        ("RENEW_LEASE", "AND queue_id = %(queue_id)s "),
        ("RELEASE_LEASE", "AND queue_id = %(queue_id)s "),
        ("RENEW_OWN_LIVE_LEASE", "AND i.queue_id = %(queue_id)s\n"),
        ("CLAIM_NEXT_ITEM", "AND i.queue_id = %(queue_id)s "),
        ("RENEW_OWN_LIVE_LEASE_FOR_PAGE", "AND i.queue_id = %(queue_id)s\n"),
        ("CLAIM_NEXT_ITEM_FOR_PAGE", "AND i.queue_id = %(queue_id)s "),
        ("RELEASE_LANE_TASK", "AND queue_id = %(queue_id)s "),
        ("RENEW_LANE_TASK", "AND t.queue_id = %(queue_id)s "),
        ("LOCK_LANE_TASK", "AND t.queue_id = %(queue_id)s "),
        ("LOCK_LANE_TASK", "AND d.queue_id = %(queue_id)s"),
        ("CLAIM_LANE_TASK", "AND t.queue_id = %(queue_id)s AND t.state = 'open'\n"),
        ("CONFIRM_CHECK", "AND queue_id = %(queue_id)s "),
        ("CONFIRM_CHECK", "AND i.queue_id = %(queue_id)s "),
        ("RETURN_CHECK", "AND i.queue_id = %(queue_id)s "),
    ],
)
def test_it_fails_when_a_queue_predicate_is_dropped(name, predicate):
    statement = STATEMENTS[name]
    assert predicate in statement
    assert shard_problems(statement.replace(predicate, "", 1)) != []


def test_it_fails_on_a_lookup_by_item_id_alone():
    by_id = "SELECT queue_id FROM queue_app_reviewitem WHERE id = %(item_id)s"
    assert shard_problems(by_id) == [
        "queue_app_reviewitem AS queue_app_reviewitem: no queue_id = <value> in WHERE"
    ]
    # An OR does not pin a shard, nor does a join to the queue table.
    assert shard_problems(
        "SELECT 1 FROM queue_app_decision AS d JOIN queue_app_queue AS q ON q.id = d.queue_id"
        " WHERE d.queue_id = %(a)s OR d.id = %(b)s"
    )


def test_the_cross_queue_statements_are_known_to_be_cross_queue():
    # Not on the hot path by design (docs/scaling.md): the checker says so too.
    assert shard_problems(outbox_sql.CLAIM_DUE_EFFECT_JOBS) != []
    assert shard_problems(leases_sql.ESCALATE_ABANDONED) != []
