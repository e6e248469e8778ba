-- B7's baseline: the decision insert trigger as it was before migration 0010. Every decision
-- takes one advisory lock (the chain's) and holds it until its transaction ends, so decisions
-- in every queue commit one at a time. bench/decisions.py installs this into its scratch
-- database for the baseline runs and puts the current definition back afterwards. Kept
-- byte-for-byte in step with the current trigger's checks (four eyes), differing only in the
-- lock and the chain assignment.
CREATE OR REPLACE FUNCTION queue_app_decision_before_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  prev_seq bigint;
  prev_hash text;
  superseded_reviewer bigint;
BEGIN
  IF NEW.supersedes_id IS NOT NULL THEN
    SELECT reviewer_id INTO superseded_reviewer FROM queue_app_decision WHERE id = NEW.supersedes_id;
    IF superseded_reviewer = NEW.reviewer_id THEN
      RAISE EXCEPTION 'four eyes: reviewer % cannot overturn their own decision %',
        NEW.reviewer_id, NEW.supersedes_id USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  PERFORM pg_advisory_xact_lock(23155042322311534);  -- 0x5243636861696E, "RCchain"
  SELECT chain_seq, chain_hash INTO prev_seq, prev_hash
    FROM queue_app_decision WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1;
  NEW.chain_seq := coalesce(prev_seq, 0) + 1;
  NEW.chain_hash := encode(sha256(convert_to(
      coalesce(prev_hash, '') || '|' || queue_app_decision_chain_input(NEW), 'UTF8')), 'hex');
  RETURN NEW;
END;
$$;
