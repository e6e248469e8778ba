"""The history generator: years of decided work, bulk-loaded with SQL, for B10.

At --scale 1: 2,000,000 items (about 10,000,000 decisions, five a decided item on average, each
round a re-review), their item events (created, claimed, decided, attachment put: in time
order, as the console writes them), 200,000 subjects (named like people and companies),
500 reviewers, 50 queues, about 1,000,000 lane tasks (a decision in ten: checks and QA, nearly
all done, each done one with its outcome), attachment metadata on a tenth of the items, access
history (user access events), applied-effect rows, spread over three years. The skew is
realistic: queue k gets a share of about 1/k (a few large queues), subjects are drawn with a
square law (the busiest has thousands of items), reviewers with a power law, and the rows are
spread evenly over the three years, so two decisions in three are more than a year old. The
newest items are the open work: pending items in every queue, items awaiting their check, open
QA tasks.

The rows are written server-side (INSERT … SELECT over generate_series, the fastest bulk path:
nothing crosses the wire) with session_replication_role = replica, so no trigger runs and no
foreign key is checked row by row: the generator writes what the triggers would have (the
reviewer's name on a decision, the principals on a lane task, the intake queue on an item).
The chain is real: every decision and lane outcome is sealed, in batches of the sealer's size,
with leaves computed by the database's own leaf functions and Merkle roots and batch hashes by
queue_app/chain.py, so `verify_decisions` checks the generated history like any other.
Then VACUUM ANALYZE; the time of each step and the database's size are written to
bench/results/history[-smoke].json.

    .venv/bin/python bench/history.py                   # 10M decisions into rc_history10m
    .venv/bin/python bench/history.py --scale 0.1 --db rc_history1m
    .venv/bin/python bench/history.py --smoke           # scale 0.0005, seconds (the test suite)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, scratch_database, write_results

YEARS = 3
QUEUES = 50
REVIEWERS = 500
FULL = {"items": 2_000_000, "subjects": 200_000, "access_events": 100_000}
# Open work at scale 1 (the newest items): pending items, items awaiting their check, open QA.
OPEN = {"pending": 20_000, "awaiting": 5_000, "open_qa": 5_000}
# Pending items of the largest queue claimed first (priority 1), all on the busiest subject:
# B10's item page shows them with that subject's history beside them.
BUSY_FIRST = 300
PASSWORD = "history-bench-password"


def _sized(n: int, scale: float, least: int = 1) -> int:
    return max(least, round(n * scale))


def setup_people() -> dict[str, Any]:
    """Queues, reason codes, reviewers (one group with every queue), an admin; via the ORM."""
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group, User

    from queue_app.models import Queue, ReasonCode

    group = Group.objects.create(name="History reviewers")
    password = make_password(PASSWORD)
    users = User.objects.bulk_create(
        [User(username=f"h-reviewer-{i:03d}", password=password) for i in range(1, REVIEWERS + 1)]
    )
    group.user_set.add(*users)
    admin = User.objects.create_superuser("h-admin", password=PASSWORD)
    queues = []
    for k in range(1, QUEUES + 1):
        queue = Queue.objects.create(slug=f"q{k:02d}", name=f"Queue {k:02d}", qa_rate=5)
        queue.reviewer_groups.add(group)
        queues.append(queue)
        for verdict in ("approve", "reject"):
            for code in range(1, 4):
                ReasonCode.objects.create(
                    queue=queue,
                    verdict=verdict,
                    code=f"{verdict}-{code}",
                    label=f"{verdict.title()} {code}",
                    is_default=code == 1,
                )
    return {
        "user_ids": [u.pk for u in users],
        "admin_id": admin.pk,
        "queue_ids": [q.pk for q in queues],
    }


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Subjects are named as a KYC or moderation queue names them: a person (first name and
# surname) or, one in five, a company. Names are drawn with a skew (a few surnames are common,
# as in any population), so a search by surname meets thousands of items and a full name few.
FIRST_NAMES = _words(
    "Anna Ben Carla David Elena Farid Greta Hugo Ines Jonas Kaja Leon Maria Nils Olga Pavel "
    "Quinn Rosa Samir Tara Umar Vera Wim Xenia Yusuf Zoe Amir Bianca Chen Dalia Emil Fatima "
    "Gabriel Hana Ivan Julia Karim Lena Mateo Nora Oskar Paula Rafael Sofia Tomas Ula Viktor "
    "Wanda Yara Zeynep Aiko Bruno Celine Dmitri Eva Felix Giulia Hamza Irene Jan Klara Luca "
    "Mina Noah Olivia Pedro Ruth Stefan Thea Uwe Valentina Wei Ximena Yosef Aaliyah Boris "
    "Clara Diego Esther Florian Gemma Henrik Ida Jakub Kofi Lina Marek Naomi Omar Petra "
    "Reza Selin Timo Ursula Vincent Wiktoria Yuki Zainab"
)
SURNAMES = _words(
    "Smith Müller Garcia Nowak Rossi Kowalski Schmidt Martin Jansen Novak Silva Dubois Bauer "
    "Fischer Weber Meyer Wagner Becker Schulz Hoffmann Koch Richter Klein Wolf Schröder "
    "Neumann Schwarz Zimmermann Braun Krüger Hofmann Hartmann Lange Schmitt Werner Krause "
    "Meier Lehmann Schmid Schulze Maier Köhler Herrmann König Walter Mayer Huber Kaiser Fuchs "
    "Peters Lang Scholz Möller Weiß Jung Hahn Schubert Vogel Friedrich Keller Günther Frank "
    "Berger Winkler Roth Beck Lorenz Baumann Franke Albrecht Schuster Simon Ludwig Böhm "
    "Winter Kraus Schumacher Krämer Vogt Stein Jäger Otto Sommer Groß Seidel Heinrich Brandt "
    "Haas Schreiber Graf Schulte Dietrich Ziegler Kuhn Kühn Pohl Engel Horn Busch Bergmann "
    "Thomas Voigt Sauer Arnold Wolff Pfeiffer Johnson Williams Brown Jones Miller Davis "
    "Wilson Anderson Taylor Moore Jackson White Harris Thompson Clark Lewis Robinson Walker "
    "Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall "
    "Rivera Campbell Mitchell Carter Roberts Kim Lee Park Chen Wang Li Zhang Liu Yang Huang "
    "Zhao Wu Zhou Sun Ma Tanaka Suzuki Takahashi Watanabe Ito Yamamoto Nakamura Kobayashi "
    "Sato Kato Yilmaz Kaya Demir Sahin Celik Yildiz Öztürk Aydin Ivanov Smirnov Kuznetsov "
    "Popov Petrov Sokolov Horvat Kovacs Nagy Szabo Toth Varga Papadopoulos Rossetti Esposito "
    "Bianchi Romano Colombo Ricci Marino Greco Bruno Gallo Conti Costa Giordano Mancini "
    "Rizzo Lombardi Moretti Fernandez Lopez Martinez Sanchez Perez Gomez Diaz Alvarez Romero "
    "Navarro Ruiz Moreno Jimenez Hernandez Santos Oliveira Pereira Ferreira Almeida Carvalho "
    "Gomes Ribeiro Lopes Sousa Andersson Johansson Karlsson Nilsson Eriksson Larsson Olsen "
    "Hansen Nielsen Jensen Pedersen Virtanen Korhonen Mäkinen Nieminen Okafor Mensah Diallo "
    "Traore Kamara Haddad Khalil Nasser Rahman Hossain Khan Ali Ahmed Hussain Patel Shah "
    "Singh Kumar Sharma Gupta Mehta Reddy Iyer Das Bose"
)
COMPANY_FORMS = ("Holdings", "Trading", "GmbH", "Ltd", "Logistics", "Partners")

# The lookup tables every statement below joins (tiny; dropped at the end).
LOOKUPS = """
CREATE TABLE h_queue (k int PRIMARY KEY, id bigint NOT NULL);
CREATE TABLE h_user (k int PRIMARY KEY, id int NOT NULL, username text NOT NULL);
CREATE TABLE h_reason (queue_id bigint, verdict text, k int, id bigint,
                       PRIMARY KEY (queue_id, verdict, k));
INSERT INTO h_queue SELECT k, id FROM unnest(%(queues)s::bigint[]) WITH ORDINALITY AS q (id, k);
INSERT INTO h_user SELECT u.k, u.id, a.username
  FROM unnest(%(users)s::int[]) WITH ORDINALITY AS u (id, k) JOIN auth_user AS a ON a.id = u.id;
INSERT INTO h_reason
SELECT queue_id, verdict, split_part(code, '-', 2)::int, id FROM queue_app_reasoncode;
"""

# Subject k's name: the first name and surname drawn from k by two multiplicative hashes
# (the same subject always has the same name), each with a skew towards the front of its list.
NAMES = """
CREATE TABLE h_name (k int PRIMARY KEY, name text NOT NULL);
INSERT INTO h_name
SELECT k, CASE WHEN k %% 5 = 0 THEN n.surname || ' ' || (%(forms)s::text[])[1 + k %% %(n_forms)s]
               ELSE n.first || ' ' || n.surname END
  FROM generate_series(1, %(subjects)s + 1) AS k
 CROSS JOIN LATERAL (SELECT ((k::bigint * 7919) %% 10007) / 10007.0 AS f,
                            ((k::bigint * 104729) %% 100003) / 100003.0 AS s) AS u
 CROSS JOIN LATERAL (
       SELECT (%(firsts)s::text[])[1 + floor(%(n_firsts)s * power(u.f, 1.5))::int] AS first,
              (%(surnames)s::text[])[1 + floor(%(n_surnames)s * power(u.s, 2))::int] AS surname
       ) AS n
"""

# (Each LATERAL names an outer column: uncorrelated, its random() would be drawn once for all.)
# Decided items, oldest first (ids in time order), spread evenly over the years before the open
# work. Queue k of 50: floor(51^u), a share of about 1/k. Subject: floor(S·u²)+1, the busiest
# with thousands of items. Decisions an item: 1-9 (five on average), kept as its round count.
ITEMS = """
INSERT INTO queue_app_reviewitem
    (id, queue_id, intake_queue_id, state, priority, created_at, subject, payload,
     idempotency_key, source_hash, trace_id, lease_count, decided_at, subject_key, review_round,
     attachments, excluded_reviewer_ids, evidence_hash)
SELECT i, q.id, q.id, CASE WHEN i > %(n)s - %(awaiting)s THEN 'awaiting_check' ELSE 'decided' END,
       0, t.created, nm.name,
       jsonb_build_object('amount', round((random() * 10000)::numeric, 2), 'ref', 'R' || i,
                          'currency', (ARRAY['EUR', 'USD', 'GBP'])[1 + i %% 3]),
       'h-' || i, '', gen_random_uuid(), r.rounds,
       t.created + make_interval(mins => 10 * r.rounds),
       'subject-' || nm.k, r.rounds - 1,
       CASE WHEN i %% 10 = 0 THEN jsonb_build_object(
                'scan.pdf', jsonb_build_object('sha256', encode(sha256(int8send(i)), 'hex'),
                                               'content_type', 'application/pdf',
                                               'size', 20000 + i %% 50000))
            ELSE '{}'::jsonb END,
       '{}', NULL
  FROM generate_series(1, %(n)s) AS i
  CROSS JOIN LATERAL (SELECT least(50, floor(exp(random() * ln(51)))::int) AS k,
                             random() AS u, 1 + floor(random() * 9)::int AS rounds,
                             i AS correlated) AS x
  CROSS JOIN LATERAL (SELECT x.u) AS s (u)
  CROSS JOIN LATERAL (SELECT x.rounds) AS r (rounds)
  JOIN h_queue AS q ON q.k = x.k
  JOIN h_name AS nm ON nm.k = floor(%(subjects)s * s.u * s.u)::int + 1
  CROSS JOIN LATERAL (SELECT %(start)s::timestamptz
                             + %(span)s::interval * ((i - 1)::float8 / %(n)s) AS created) AS t
"""

# One decision per round of every decided item, in item order (ids follow time closely);
# what the insert triggers would write is written here (the reviewer's name, no chain position).
# Reviewer: floor(500·u^1.5)+1, a few busy people. Seven in ten approve.
DECISIONS = """
INSERT INTO queue_app_decision
    (item_id, queue_id, reviewer_id, reviewer_username, verdict, reason_code_id, evidence_hash,
     note, supersedes_id, corrected_verdict, lease_token, created_at, chain_seq, chain_hash,
     review_round)
SELECT i.id, i.queue_id, u.id, u.username, v.verdict, rc.id,
       md5(i.id || '-' || rnd.r) || md5(rnd.r || '-' || i.id),
       CASE WHEN i.id %% 50 = 0 THEN 'Checked against the statement.' ELSE '' END,
       NULL, NULL, gen_random_uuid(),
       i.created_at + make_interval(mins => 10 * (rnd.r + 1)), NULL, '', rnd.r
  FROM queue_app_reviewitem AS i
  CROSS JOIN LATERAL generate_series(0, i.review_round) AS rnd (r)
  CROSS JOIN LATERAL (SELECT least(%(reviewers)s, floor(%(reviewers)s * power(random(), 1.5))::int
                                                  + 1) AS k,
                             CASE WHEN random() < 0.7 THEN 'approve' ELSE 'reject' END AS verdict,
                             1 + floor(random() * 3)::int AS code,
                             rnd.r + i.id AS correlated) AS v
  JOIN h_user AS u ON u.k = v.k
  JOIN h_reason AS rc ON rc.queue_id = i.queue_id AND rc.verdict = v.verdict AND rc.k = v.code
 WHERE i.state IN ('decided', 'awaiting_check')
"""

# Every event an item's rounds leave, written in time order as the console writes them (the
# newest events at the heap's end): created, the attachment put, and for each decision the
# claim it was made under (a handling time of 20 s to 10 min, most a few minutes) and itself.
EVENTS = """
INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
SELECT item_id, kind, actor_id, at, detail FROM (
SELECT id AS item_id, 'created' AS kind, NULL::integer AS actor_id, created_at AS at,
       '{}'::jsonb AS detail
  FROM queue_app_reviewitem
 WHERE state IN ('decided', 'awaiting_check')
UNION ALL
SELECT id, 'attachment_put', NULL::integer, created_at + interval '1 minute',
       jsonb_build_object('name', 'scan.pdf') || (attachments -> 'scan.pdf')
  FROM queue_app_reviewitem WHERE attachments <> '{}'::jsonb
UNION ALL
SELECT d.item_id, 'decided', d.reviewer_id, d.created_at,
       jsonb_build_object('decision_id', d.id, 'verdict', d.verdict, 'corrected_verdict', NULL,
                          'awaiting_check', i.state = 'awaiting_check'
                                            AND d.review_round = i.review_round)
  FROM queue_app_decision AS d JOIN queue_app_reviewitem AS i ON i.id = d.item_id
UNION ALL
SELECT d.item_id, 'claimed', d.reviewer_id,
       d.created_at - make_interval(secs => 20 + 580 * power(random(), 2)),
       jsonb_build_object('lease_count', d.review_round + 1, 'previous_owner_id', NULL)
  FROM queue_app_decision AS d
) AS e
 ORDER BY at
"""

# A decision in ten gets a lane task: seven in ten a check, the rest QA; the newest QA tasks
# are open, every other one done under the lease of a reviewer other than the maker. The last
# decision of each item awaiting its check gets an open check (its item's state says so).
LANE_TASKS = """
INSERT INTO queue_app_lanetask
    (kind, queue_id, item_id, decision_id, maker_id, maker_principal_id, state, lease_owner_id,
     lease_token, lease_expires, lease_count, created_at, done_at, due_at)
SELECT t.kind, d.queue_id, d.item_id, d.id, d.reviewer_id, d.reviewer_id,
       CASE WHEN t.open THEN 'open' ELSE 'done' END,
       CASE WHEN t.open THEN NULL ELSE c.id END,
       CASE WHEN t.open THEN NULL ELSE gen_random_uuid() END,
       CASE WHEN t.open THEN NULL ELSE d.created_at + interval '40 minutes' END,
       CASE WHEN t.open THEN 0 ELSE 1 END,
       d.created_at, CASE WHEN t.open THEN NULL ELSE d.created_at + interval '30 minutes' END,
       NULL
  FROM queue_app_decision AS d
  JOIN queue_app_reviewitem AS i ON i.id = d.item_id
  CROSS JOIN LATERAL (
      SELECT CASE WHEN i.state = 'awaiting_check' AND d.review_round = i.review_round
                  THEN 'check'
                  WHEN (d.id / 10) %% 10 < 7 THEN 'check' ELSE 'qa' END AS kind,
             (i.state = 'awaiting_check' AND d.review_round = i.review_round)
             OR ((d.id / 10) %% 10 >= 7 AND d.id > %(last_decision)s - %(open_qa)s * 30) AS open
  ) AS t
  JOIN h_user AS m ON m.id = d.reviewer_id
  JOIN h_user AS c ON c.k = m.k %% %(reviewers)s + 1
 WHERE (d.id %% 10 = 0 AND NOT (i.state = 'awaiting_check' AND d.review_round = i.review_round))
    OR (i.state = 'awaiting_check' AND d.review_round = i.review_round)
 ORDER BY d.id
"""

OUTCOMES = """
INSERT INTO queue_app_laneoutcome
    (task_id, kind, result, actor_id, actor_username, lease_token, verdict, reason_code_id,
     agrees_verdict, agrees_reason, note, overturn_id, created_at)
SELECT t.id, t.kind, CASE WHEN t.kind = 'check' THEN 'confirmed' ELSE 'reviewed' END,
       t.lease_owner_id, u.username, t.lease_token,
       CASE WHEN t.kind = 'qa' THEN d.verdict ELSE '' END,
       CASE WHEN t.kind = 'qa' THEN d.reason_code_id END,
       CASE WHEN t.kind = 'qa' THEN true END, CASE WHEN t.kind = 'qa' THEN true END,
       '', NULL, t.done_at
  FROM queue_app_lanetask AS t
  JOIN queue_app_decision AS d ON d.id = t.decision_id
  JOIN h_user AS u ON u.id = t.lease_owner_id
 WHERE t.state = 'done'
 ORDER BY t.id
"""

APPLIED = """
INSERT INTO queue_app_applieddecision (decision_id, applied_at, outcome, status)
SELECT d.id, d.created_at + interval '2 seconds', '{}'::jsonb, 'applied'
  FROM queue_app_decision AS d JOIN queue_app_reviewitem AS i ON i.id = d.item_id
 WHERE NOT (i.state = 'awaiting_check' AND d.review_round = i.review_round)
"""

# Access history: each reviewer's account changes over the years (the pghistory event rows).
ACCESS = """
INSERT INTO queue_app_useraccessevent
    (pgh_created_at, pgh_label, pgh_context, pgh_context_id, username, is_active, is_staff,
     is_superuser, pgh_obj_id)
SELECT %(start)s::timestamptz + %(span)s::interval * (g::float8 / %(n)s),
       CASE WHEN g <= %(reviewers)s THEN 'insert' ELSE 'update' END,
       NULL, NULL, u.username, g %% 97 <> 0, false, false, u.id
  FROM generate_series(1, %(n)s) AS g
  JOIN h_user AS u ON u.k = (g - 1) %% %(reviewers)s + 1
"""

# The sealer's work, done in bulk: each decision's leaf (the database's own leaf function) at
# its place in batches of the sealer's size, then each outcome's in the batches after them.
SEAL_DECISIONS = """
INSERT INTO queue_app_chainentry (decision_id, batch_id, position, leaf)
SELECT d.id, (d.id - 1) / %(size)s + 1, (d.id - 1) %% %(size)s, queue_app_decision_leaf(d)
  FROM queue_app_decision AS d
"""
SEAL_OUTCOMES = """
INSERT INTO queue_app_laneoutcomeentry (outcome_id, batch_id, position, leaf)
SELECT o.task_id, %(first)s + (x.n - 1) / %(size)s, (x.n - 1) %% %(size)s,
       queue_app_laneoutcome_leaf(o)
  FROM queue_app_laneoutcome AS o
  JOIN (SELECT task_id, row_number() OVER (ORDER BY task_id) AS n
          FROM queue_app_laneoutcome) AS x ON x.task_id = o.task_id
"""
# The decision and check tallies, which triggers keep as decisions and check outcomes are
# written: the generator writes with triggers off, so it fills them from those rows once.
TALLY = """
INSERT INTO queue_app_decisiontally
       (reviewer_id, day, queue_id, verdict, decisions)
SELECT reviewer_id, date_trunc('day', created_at, 'UTC'), queue_id, verdict, count(*)
  FROM queue_app_decision
 GROUP BY 1, 2, 3, 4
"""
CHECK_TALLY = """
INSERT INTO queue_app_checktally (day, queue_id, result, checker_id, checks)
SELECT date_trunc('day', o.created_at, 'UTC'), k.queue_id, o.result, o.actor_id, count(*)
  FROM queue_app_laneoutcome AS o JOIN queue_app_lanetask AS k ON k.id = o.task_id
 WHERE o.kind = 'check'
 GROUP BY 1, 2, 3, 4
"""
LEAVES = """
SELECT batch_id, leaf FROM (
    SELECT batch_id, position, leaf FROM queue_app_chainentry
    UNION ALL
    SELECT batch_id, position, leaf FROM queue_app_laneoutcomeentry) AS e
 ORDER BY batch_id, position
"""


def pending_items(queue_ids: list[int], n: int, *, busy: int, start_id: int) -> None:
    """The open work: n pending items over the queues (the same 1/k shares), the newest rows,
    each with its evidence hash as intake stores it (as bench.common.load_pending computes it).
    The first `busy` of the largest queue are on the busiest subject, at priority 1."""
    from django.db import connection

    from queue_app.evidence import canonical_evidence, item_evidence_hash
    from queue_app.models import ReviewItem

    marker = "SUBJECT-MARKER"
    payload = {"amount": "12.50"}
    head, tail = canonical_evidence(subject=marker, payload=payload).split(f'"{marker}"')
    with connection.cursor() as c:
        c.execute(
            """
            INSERT INTO queue_app_reviewitem
                (id, queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                 idempotency_key, source_hash, trace_id, lease_count, subject_key, review_round,
                 attachments, excluded_reviewer_ids, evidence_hash)
            SELECT %(start_id)s + g, q.id, q.id, 'pending', CASE WHEN busy THEN 1 ELSE 0 END,
                   now() - make_interval(secs => (%(n)s - g) * 5), s.name,
                   '{"amount": "12.50"}'::jsonb, 'h-open-' || g, '', gen_random_uuid(), 0,
                   'subject-' || x.subject,
                   0, '{}', '{}',
                   encode(sha256(convert_to(%(head)s || '"' || s.name || '"' || %(tail)s,
                                            'UTF8')), 'hex')
              FROM generate_series(1, %(n)s) AS g
              CROSS JOIN LATERAL (SELECT g <= %(busy)s AS busy,
                                         CASE WHEN g <= %(busy)s THEN 1
                                              ELSE least(50, floor(exp(random() * ln(51)))::int)
                                         END AS k,
                                         CASE WHEN g <= %(busy)s THEN 1
                                              ELSE floor(%(subjects)s * random() ^ 2)::int + 1
                                         END AS subject) AS x
              JOIN h_queue AS q ON q.k = x.k
              JOIN h_name AS s ON s.k = x.subject
            """,
            {
                "n": n,
                "busy": busy,
                "start_id": start_id,
                "subjects": FULL["subjects"],
                "head": head,
                "tail": tail,
            },
        )
        c.execute(
            "INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail) "
            "SELECT id, 'created', NULL, created_at, '{}'::jsonb FROM queue_app_reviewitem "
            "WHERE state = 'pending'"
        )
    sample = ReviewItem.objects.filter(state="pending").order_by("-id").first()
    assert sample is not None and sample.evidence_hash == item_evidence_hash(sample), (
        "a generated pending item's stored evidence hash is not its own"
    )


def seal(size: int) -> int:
    """Write the chain batches over the sealed entries (roots and hashes as the sealer makes
    them); return how many batches."""
    from django.db import connection, transaction

    from queue_app.chain import batch_hash, merkle_root

    raw = connection.connection
    previous, batches = "", []
    current_batch, leaves = None, []

    def close() -> None:
        nonlocal previous
        root = merkle_root(leaves).hex()
        hashed = batch_hash(prev_hash=previous, seq=current_batch, size=len(leaves), root=root)
        batches.append((current_batch, len(leaves), root, previous, hashed))
        previous = hashed

    with transaction.atomic(), raw.cursor(name="h_leaves") as cursor:
        cursor.itersize = 50_000
        cursor.execute(LEAVES)
        for batch_id, leaf in cursor:
            if batch_id != current_batch:
                if leaves:
                    close()
                current_batch, leaves = batch_id, []
            leaves.append(bytes.fromhex(leaf))
    if leaves:
        close()
    with (
        raw.cursor() as cursor,
        cursor.copy(
            "COPY queue_app_chainbatch (seq, size, merkle_root, prev_hash, batch_hash, sealed_at) "
            "FROM STDIN"
        ) as copy,
    ):
        for seq, n, root, prev, hashed in batches:
            copy.write_row((seq, n, root, prev, hashed, "now"))
    return len(batches)


def generate(
    db: str, scale: float, open_scale: float | None = None, days: int = YEARS * 365
) -> dict[str, Any]:
    scratch_database(db)
    from django.db import connection

    from queue_app.chain import SEAL_BATCH_LIMIT

    timings: dict[str, float] = {}
    began = time.perf_counter()

    def step(name: str, sql: str, params: dict[str, Any] | None = None) -> int:
        t0 = time.perf_counter()
        with connection.cursor() as c:
            c.execute(sql, params or {})
            rows = c.rowcount
        timings[name] = round(time.perf_counter() - t0, 1)
        print(f"  {name}: {rows:,} rows in {timings[name]} s", flush=True)
        return rows

    people = setup_people()
    n_items = _sized(FULL["items"], scale, 50)
    # Enough open work at any scale for B10's samples (each takes an item or a task).
    # The open work scales with open_scale (default: the history's scale). B10 compares
    # databases that differ in history only: the small one is generated with the large one's
    # open_scale, so the same backlog waits in both.
    open_scale = scale if open_scale is None else open_scale
    awaiting = _sized(OPEN["awaiting"], open_scale, 100)
    pending = _sized(OPEN["pending"], open_scale, 400)
    busy = min(BUSY_FIRST, pending // 2)
    span = f"{days} days"
    counts: dict[str, int] = {}
    with connection.cursor() as c:
        c.execute("SET session_replication_role = replica")
        c.execute("SELECT setseed(0.48)")
        for statement in filter(str.strip, LOOKUPS.split(";")):
            c.execute(statement, {"queues": people["queue_ids"], "users": people["user_ids"]})
        names = {
            "subjects": FULL["subjects"],
            "firsts": list(FIRST_NAMES),
            "n_firsts": len(FIRST_NAMES),
            "surnames": list(SURNAMES),
            "n_surnames": len(SURNAMES),
            "forms": list(COMPANY_FORMS),
            "n_forms": len(COMPANY_FORMS),
        }
        for statement in filter(str.strip, NAMES.split(";")):
            c.execute(statement, names)
    start = f"now() - interval '{int(days)} days'"
    with connection.cursor() as c:
        c.execute(f"SELECT ({start})::text")
        start_at = c.fetchone()[0]
    counts["items"] = step(
        "items",
        ITEMS,
        {
            "n": n_items,
            "awaiting": awaiting,
            "subjects": FULL["subjects"],
            "start": start_at,
            "span": span,
        },
    )
    counts["decisions"] = step("decisions", DECISIONS, {"reviewers": REVIEWERS})
    counts["item_events"] = step("item events", EVENTS)
    with connection.cursor() as c:
        c.execute("SELECT max(id) FROM queue_app_decision")
        last_decision = c.fetchone()[0]
    counts["lane_tasks"] = step(
        "lane tasks",
        LANE_TASKS,
        {
            "last_decision": last_decision,
            "open_qa": _sized(OPEN["open_qa"], open_scale, 100),
            "reviewers": REVIEWERS,
        },
    )
    counts["lane_outcomes"] = step("lane outcomes", OUTCOMES)
    counts["applied"] = step("applied effects", APPLIED)
    counts["access_events"] = step(
        "access history",
        ACCESS,
        {
            "n": _sized(FULL["access_events"], scale, REVIEWERS),
            "reviewers": REVIEWERS,
            "start": start_at,
            "span": span,
        },
    )
    t0 = time.perf_counter()
    pending_items(people["queue_ids"], pending, busy=busy, start_id=n_items)
    counts["pending"] = pending
    timings["pending items"] = round(time.perf_counter() - t0, 1)
    step("decision tally", TALLY)
    step("check tally", CHECK_TALLY)
    step("seal decisions", SEAL_DECISIONS, {"size": SEAL_BATCH_LIMIT})
    first_outcome_batch = -(-last_decision // SEAL_BATCH_LIMIT) + 1
    step("seal outcomes", SEAL_OUTCOMES, {"size": SEAL_BATCH_LIMIT, "first": first_outcome_batch})
    t0 = time.perf_counter()
    counts["chain_batches"] = seal(SEAL_BATCH_LIMIT)
    timings["batch roots"] = round(time.perf_counter() - t0, 1)
    with connection.cursor() as c:
        for table, column in (
            ("queue_app_reviewitem", "id"),
            ("queue_app_decision", "id"),
            ("queue_app_itemevent", "id"),
            ("queue_app_lanetask", "id"),
            ("queue_app_useraccessevent", "pgh_id"),
        ):
            c.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                f"(SELECT max({column}) FROM {table}))"
            )
        c.execute("DROP TABLE h_queue, h_user, h_reason, h_name")
        c.execute("SET session_replication_role = DEFAULT")
    loaded = time.perf_counter() - began
    t0 = time.perf_counter()
    with connection.cursor() as c:
        c.execute("VACUUM ANALYZE")
        c.execute("CHECKPOINT")
        c.execute("SELECT pg_database_size(current_database())")
        size = c.fetchone()[0]
    timings["vacuum analyze"] = round(time.perf_counter() - t0, 1)
    total = time.perf_counter() - began
    print(f"  loaded in {loaded:.0f} s, {total:.0f} s with VACUUM ANALYZE; {size / 2**30:.2f} GiB")
    return {
        "db": db,
        "scale": scale,
        "days": days,
        "open_scale": open_scale,
        "counts": counts,
        "timings_s": timings,
        "load_s": round(loaded, 1),
        "total_s": round(total, 1),
        "size_bytes": size,
        "size_gib": round(size / 2**30, 2),
        "admin": "h-admin",
        "reviewer": "h-reviewer-001",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1 = 10,000,000 decisions")
    parser.add_argument(
        "--open-scale", type=float, default=None, help="scale of the open work (default: --scale)"
    )
    parser.add_argument("--db", default=None, help="database name (default by scale)")
    parser.add_argument(
        "--days",
        type=int,
        default=YEARS * 365,
        help="the span the history covers (default three years); with --scale days/1095 it is "
        "the same team's first days: the same rate, a shorter past",
    )
    parser.add_argument("--smoke", action="store_true", help="scale 0.0005 (seconds)")
    args = parser.parse_args()
    scale = 0.0005 if args.smoke else args.scale
    db = args.db or ("rc_history_smoke" if args.smoke else "rc_history10m")
    print(f"generating history at scale {scale} into {db}", flush=True)
    result = generate(db, scale, args.open_scale, args.days)
    result["machine"] = machine()
    result["smoke"] = args.smoke
    path = write_results("history-smoke" if args.smoke else f"history-{db}", result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
