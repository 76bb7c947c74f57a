-- Task and run ids reveal nothing (docs/mate-api.md "Ids"): each is a counter run through a keyed
-- permutation, so a tenant cannot count another tenant's creates between two of its own. Ids stay
-- integers below 2^52 (safe as JSON numbers, which the Anymate clients read as 64-bit integers),
-- distinct for ever (a permutation of the counter). The key is random, made here, per database.
CREATE TABLE id_secret (
  only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  key       text NOT NULL
);
INSERT INTO id_secret (key) VALUES (md5(gen_random_uuid()::text || gen_random_uuid()::text));

-- A four-round Feistel network over 52 bits (two 26-bit halves), md5 of the key as its round
-- function; 0 is never an id (the counter value that would give 0 gets the image of 0 instead,
-- which no counter value reaches: counters start at 1).
CREATE FUNCTION qm_permute_id(n bigint, k text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  v bigint := n;
  l bigint;
  r bigint;
  t bigint;
BEGIN
  LOOP
    l := v >> 26;
    r := v & 67108863;
    FOR i IN 1..4 LOOP
      t := r;
      r := l # (('x' || substr(md5(k || i || ':' || r), 1, 7))::bit(28)::bigint >> 2);
      l := t;
    END LOOP;
    v := (l << 26) | r;
    EXIT WHEN v <> 0;
  END LOOP;
  RETURN v;
END $$;

-- The id for counter value n of a kind of row ('tasks', 'runs'): each kind has a key of its own.
CREATE FUNCTION qm_opaque_id(n bigint, kind text) RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE
  RETURN qm_permute_id(n, (SELECT key FROM id_secret) || ':' || kind);

-- The identity columns become a counter (continuing where the identity was) and the permuted
-- default. Ids already given keep their values.
DO $$
DECLARE
  tbl text;
  last bigint;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['tasks', 'runs'] LOOP
    EXECUTE format('SELECT last_value FROM %s', pg_get_serial_sequence(tbl, 'id')) INTO last;
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP IDENTITY', tbl);
    EXECUTE format('CREATE SEQUENCE %I OWNED BY %I.id', tbl || '_id_counter', tbl);
    PERFORM setval(tbl || '_id_counter', GREATEST(last, 1), true);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id SET DEFAULT qm_opaque_id(nextval(%L), %L)', tbl, tbl || '_id_counter', tbl);
  END LOOP;
END $$;

-- The take order's last tie-break (tasks with the same urgency, deadline and queue position) stays
-- the order of creation: a counter of its own, never answered. Existing tasks keep the order of
-- their ids, which were that counter.
CREATE SEQUENCE tasks_seq;
ALTER TABLE tasks ADD COLUMN seq bigint;
UPDATE tasks SET seq = id;
SELECT setval('tasks_seq', COALESCE((SELECT max(seq) FROM tasks), 0) + 1, false);
ALTER TABLE tasks ALTER COLUMN seq SET DEFAULT nextval('tasks_seq'), ALTER COLUMN seq SET NOT NULL;
ALTER SEQUENCE tasks_seq OWNED BY tasks.seq;
DROP INDEX tasks_take_deadline_idx;
DROP INDEX tasks_take_idx;
CREATE INDEX tasks_take_deadline_idx ON tasks (tenant_id, process_id, urgent DESC, deadline ASC NULLS LAST, queue_position, seq)
  WHERE queue = 'Ready' AND locked_until IS NULL AND deleted_at IS NULL;
CREATE INDEX tasks_take_idx ON tasks (tenant_id, process_id, urgent DESC, queue_position, seq)
  WHERE queue = 'Ready' AND locked_until IS NULL AND deleted_at IS NULL;
