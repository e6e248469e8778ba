"""The decide's payload rules as SQL functions, so that the decide is one statement.

Whether a decision needs a checker (a maker-checker policy's dotted path and threshold) and
whether a queue's evidence rules warn on an item are judged here, inside the statement that
closes the item and records the decision (decisions_sql.CLOSE_AND_RECORD_DECISION), with the semantics of
queue_app/rules.py, which the item page still uses to show the warnings:

- a dotted path walks objects by key and arrays by a position written in ASCII digits; anything
  else (a missing key, a position past the end, a scalar in the way) is no value;
- a number is a JSON number, or a string Decimal() reads as a finite number once trimmed
  (underscores ignored, as Decimal ignores them), compared exactly as numeric;
- a date in the past is a string of ten characters read as an ISO date before today, or an ISO
  date-time before now; a date-time without an offset is in the given time zone (Django's
  current one, passed by the caller).

Anything a test cannot judge does not match; a policy whose number cannot be read needs a check
(it fails safe). tests/test_decide_rules_in_sql.py runs these and the Python over one table.
"""

from django.db import migrations

FORWARD = r"""
CREATE FUNCTION queue_app_payload_at(p_payload jsonb, p_path text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  current jsonb := p_payload;
  segment text;
BEGIN
  -- regexp_split_to_array keeps the one empty segment of an empty path, as str.split does.
  FOREACH segment IN ARRAY regexp_split_to_array(p_path, '\.') LOOP
    IF jsonb_typeof(current) = 'object' AND current ? segment THEN
      current := current -> segment;
    ELSIF jsonb_typeof(current) = 'array' AND segment ~ '^[0-9]+$' THEN
      IF segment::numeric >= jsonb_array_length(current) THEN
        RETURN NULL;
      END IF;
      current := current -> segment::int;
    ELSE
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN current;
END $$;

-- str.strip(): what str.isspace() calls white space, at either end.
CREATE FUNCTION queue_app_strip(p_text text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT regexp_replace(p_text,
      '^[\s\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+'
      '|[\s\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$',
      '', 'g')
$$;

CREATE FUNCTION queue_app_number_text(p_text text) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  -- Decimal() ignores white space at the ends and every underscore.
  bare text := replace(queue_app_strip(p_text), '_', '');
BEGIN
  IF bare !~ '^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$' THEN
    RETURN NULL;
  END IF;
  RETURN bare::numeric;
EXCEPTION WHEN numeric_value_out_of_range OR program_limit_exceeded THEN
  RETURN NULL;  -- an exponent numeric cannot hold: not a number these rules compare
END $$;

CREATE FUNCTION queue_app_payload_number(p_value jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE jsonb_typeof(p_value)
           WHEN 'number' THEN p_value::numeric
           WHEN 'string' THEN queue_app_number_text(p_value #>> '{}')
         END
$$;

CREATE FUNCTION queue_app_iso_week_date(p_year int, p_week int, p_day int) RETURNS date
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  jan1 date := make_date(p_year, 1, 1);
  weeks int := CASE WHEN extract(isodow FROM jan1) = 4
                      OR (extract(isodow FROM jan1) = 3
                          AND extract(day FROM make_date(p_year, 3, 1) - 1) = 29)
                    THEN 53 ELSE 52 END;
  jan4 date := make_date(p_year, 1, 4);
BEGIN
  IF p_week < 1 OR p_week > weeks OR p_day < 1 OR p_day > 7 THEN
    RETURN NULL;
  END IF;
  RETURN jan4 - (extract(isodow FROM jan4)::int - 1) + (p_week - 1) * 7 + (p_day - 1);
END $$;

CREATE FUNCTION queue_app_is_past(p_value jsonb, p_time_zone text) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
  text_ text;
  m text[];
  day date;
  clock interval := interval '0';
  offset_ interval;
  moment timestamptz;
BEGIN
  IF jsonb_typeof(p_value) <> 'string' THEN
    RETURN false;
  END IF;
  text_ := queue_app_strip(p_value #>> '{}');
  -- Ten characters: a date (date.fromisoformat), before today where the reviewer is.
  IF length(text_) = 10 THEN
    m := regexp_match(text_, '^([0-9]{4})-(?:([0-9]{2})-([0-9]{2})|W([0-9]{2})-([1-7]))$');
    IF m IS NULL THEN
      RETURN false;
    END IF;
    day := CASE WHEN m[2] IS NOT NULL THEN make_date(m[1]::int, m[2]::int, m[3]::int)
                ELSE queue_app_iso_week_date(m[1]::int, m[4]::int, m[5]::int) END;
    RETURN day < (now() AT TIME ZONE p_time_zone)::date;
  END IF;
  -- Otherwise a date-time (datetime.fromisoformat): a date, then any one character and a
  -- time, then an offset; without one, the time is in the given zone.
  m := regexp_match(text_,
      '^([0-9]{4})(?:-([0-9]{2})-([0-9]{2})|([0-9]{2})([0-9]{2})|-W([0-9]{2})(?:-([1-7]))?'
      '|W([0-9]{2})([1-7])?)'
      '(?:.([0-9]{2})(?::?([0-9]{2})(?::?([0-9]{2})(?:[.,]([0-9]+))?)?)?'
      '(Z|[+-][0-9]{2}(?::?[0-9]{2}(?::?[0-9]{2}(?:[.,][0-9]+)?)?)?)?)?$');
  IF m IS NULL THEN
    RETURN false;
  END IF;
  day := CASE WHEN m[2] IS NOT NULL THEN make_date(m[1]::int, m[2]::int, m[3]::int)
              WHEN m[4] IS NOT NULL THEN make_date(m[1]::int, m[4]::int, m[5]::int)
              WHEN m[6] IS NOT NULL
                THEN queue_app_iso_week_date(m[1]::int, m[6]::int, coalesce(m[7], '1')::int)
              ELSE queue_app_iso_week_date(m[1]::int, m[8]::int, coalesce(m[9], '1')::int) END;
  IF day IS NULL THEN
    RETURN false;
  END IF;
  IF m[10] IS NOT NULL THEN
    IF m[10]::int > 23 OR coalesce(m[11], '0')::int > 59 OR coalesce(m[12], '0')::int > 59 THEN
      RETURN false;
    END IF;
    clock := make_interval(hours => m[10]::int, mins => coalesce(m[11], '0')::int,
                           secs => coalesce(m[12], '0')::int
                                   + coalesce(('0.' || left(m[13], 6))::numeric, 0));
  END IF;
  IF m[14] IS NULL THEN
    moment := (day + clock) AT TIME ZONE p_time_zone;
  ELSIF m[14] = 'Z' THEN
    moment := (day + clock) AT TIME ZONE 'UTC';
  ELSE
    m := regexp_match(m[14],
        '^([+-])([0-9]{2})(?::?([0-9]{2})(?::?([0-9]{2})(?:[.,]([0-9]+))?)?)?$');
    IF m[2]::int > 23 OR coalesce(m[3], '0')::int > 59 OR coalesce(m[4], '0')::int > 59 THEN
      RETURN false;
    END IF;
    offset_ := make_interval(hours => m[2]::int, mins => coalesce(m[3], '0')::int,
                             secs => coalesce(m[4], '0')::int
                                     + coalesce(('0.' || left(m[5], 6))::numeric, 0));
    moment := (day + clock - CASE WHEN m[1] = '-' THEN -offset_ ELSE offset_ END)
              AT TIME ZONE 'UTC';
  END IF;
  RETURN moment < now();
EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format
            OR numeric_value_out_of_range THEN
  RETURN false;  -- no such day (the 30th of February): not a date, so not in the past
END $$;

CREATE FUNCTION queue_app_rule_matches(p_test text, p_rule_value text, p_value jsonb,
                                       p_time_zone text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT coalesce(CASE
    WHEN p_value IS NULL THEN false
    WHEN p_test = 'date_past' THEN queue_app_is_past(p_value, p_time_zone)
    WHEN p_test = 'in_list' THEN
      CASE WHEN jsonb_typeof(p_value) = 'string'
           THEN (p_value #>> '{}') IN (SELECT queue_app_strip(item)
                                          FROM unnest(string_to_array(p_rule_value, ',')) AS item
                                         WHERE queue_app_strip(item) <> '')
           ELSE EXISTS (SELECT 1 FROM unnest(string_to_array(p_rule_value, ',')) AS item
                         WHERE queue_app_number_text(item) = queue_app_payload_number(p_value))
      END
    WHEN p_test = 'below' THEN
      queue_app_payload_number(p_value) < queue_app_number_text(p_rule_value)
    WHEN p_test = 'above' THEN
      queue_app_payload_number(p_value) > queue_app_number_text(p_rule_value)
  END, false)
$$;

CREATE FUNCTION queue_app_evidence_warnings(p_queue_id bigint, p_payload jsonb,
                                            p_time_zone text)
RETURNS TABLE (path text, message text)
LANGUAGE sql STABLE AS $$
  SELECT e.path, e.message
    FROM queue_app_evidencerule AS e
   WHERE e.queue_id = p_queue_id
     AND queue_app_rule_matches(e.test, e.value, queue_app_payload_at(p_payload, e.path),
                                p_time_zone)
   ORDER BY e.id
$$;

CREATE FUNCTION queue_app_check_needed(p_queue_id bigint, p_verdict text, p_payload jsonb)
RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM queue_app_checkpolicy AS p
     WHERE p.queue_id = p_queue_id AND p.verdict = p_verdict
       AND (p.path = ''
            OR NOT coalesce(
                 queue_app_payload_number(queue_app_payload_at(p_payload, p.path)) < p.threshold,
                 false)))
$$;
"""

BACKWARD = """
DROP FUNCTION IF EXISTS queue_app_check_needed(bigint, text, jsonb);
DROP FUNCTION IF EXISTS queue_app_evidence_warnings(bigint, jsonb, text);
DROP FUNCTION IF EXISTS queue_app_rule_matches(text, text, jsonb, text);
DROP FUNCTION IF EXISTS queue_app_is_past(jsonb, text);
DROP FUNCTION IF EXISTS queue_app_iso_week_date(int, int, int);
DROP FUNCTION IF EXISTS queue_app_payload_number(jsonb);
DROP FUNCTION IF EXISTS queue_app_number_text(text);
DROP FUNCTION IF EXISTS queue_app_strip(text);
DROP FUNCTION IF EXISTS queue_app_payload_at(jsonb, text);
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0032_lane_part_items")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
