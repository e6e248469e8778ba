"""The state of streaming replication, read where it is known: on the replica, or the primary.

Read-only and cheap (no table is read): the replica router runs REPLICA_LAG before it lets a
block of reads go to the replica, and /ops/ shows both figures.
"""

from __future__ import annotations

PURPOSE = {
    "REPLICA_LAG": "How far the replica's replay is behind what it received, in seconds.",
    "STANDBYS": "The primary's standbys and how far each is behind, in seconds and bytes.",
}

# On a replica: 0 when it has replayed everything it received (an idle primary sends nothing,
# so the time since the last replayed commit says nothing then), else the time since the last
# commit it replayed. On a server that is no replica (a primary named as its own replica, as
# the tests' mirror does): 0. in_recovery says which it is.
REPLICA_LAG = """
SELECT pg_is_in_recovery() AS in_recovery,
       CASE WHEN NOT pg_is_in_recovery() THEN 0.0
            WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0.0
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0.0)
       END::float8 AS lag_seconds
"""

# On the primary: each connected standby, with the lag PostgreSQL measured for its last
# replayed WAL (replay_lag: NULL once it has caught up and nothing new was sent) and the bytes
# it still has to replay.
STANDBYS = """
SELECT application_name, client_addr::text AS client_addr, state,
       coalesce(extract(epoch FROM replay_lag), 0.0)::float8 AS replay_lag_seconds,
       pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint AS replay_behind_bytes
  FROM pg_stat_replication
 ORDER BY application_name
"""
