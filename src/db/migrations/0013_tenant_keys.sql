-- Every key names its tenant, and nothing is allocated or ordered by one counter for the whole
-- database (docs/deployment.md, "Beyond one PostgreSQL: Citus"): a tenant's rows can then live
-- together on one node of several, and every lookup, uniqueness check and id draw stays there.

-- Personal access tokens and web sessions carry their tenant (qmp_<tenant>_<secret>,
-- <tenant>_<secret>: src/accounts/sessions.ts) and are looked up by tenant and hash, so the hash is
-- unique per tenant. Tokens issued before this migration carry no tenant; they are marked legacy
-- and keep working through a lookup by hash alone, which the partial index below serves (it holds
-- only them, and empties as they expire: a session after 12 hours, a personal token within a year).
ALTER TABLE user_tokens ADD COLUMN legacy boolean NOT NULL DEFAULT false;
UPDATE user_tokens SET legacy = true;
DROP INDEX user_tokens_hash_key;
CREATE UNIQUE INDEX user_tokens_hash_key ON user_tokens (tenant_id, token_hash);
CREATE INDEX user_tokens_legacy_hash_idx ON user_tokens (token_hash) WHERE legacy;

-- Task and run ids are random: 52 bits from the strong random source behind gen_random_uuid()
-- (hex digits 19-31 of its text without dashes, none of them a version or variant digit), never 0.
-- No counter is shared by the tenants, so an id says nothing of another tenant's creates and needs
-- no coordination between nodes. Ids stay below 2^52, safe as JSON numbers (docs/mate-api.md "Ids").
-- Uniqueness is per tenant (the primary key (tenant_id, id)): the writers draw a few candidates
-- and keep the first that the tenant does not have yet (src/tasks/funnel.ts, src/runs/store.ts).
CREATE FUNCTION qm_random_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE
  RETURN GREATEST(('x' || substr(replace(gen_random_uuid()::text, '-', ''), 19, 13))::bit(52)::bigint, 1);

-- Ids already given keep their values; the counters and the keyed permutation of migration 0002
-- go with the key they used.
ALTER TABLE tasks ALTER COLUMN id SET DEFAULT qm_random_id();
ALTER TABLE runs ALTER COLUMN id SET DEFAULT qm_random_id();
DROP SEQUENCE tasks_id_counter;
DROP SEQUENCE runs_id_counter;
DROP FUNCTION qm_opaque_id(bigint, text);
DROP FUNCTION qm_permute_id(bigint, text);
DROP TABLE id_secret;

-- The events horizon of one tenant (docs/events.md §3): the horizon of the node that holds the
-- tenant's outbox rows, which is where their writing transactions' ids (xid) come from. On one
-- PostgreSQL that is the database's horizon; with the outbox distributed by tenant, this function
-- is distributed with it (docs/deployment.md), so a call for a tenant runs on that tenant's node.
-- Readers of a tenant's events compare its rows' xid with this, never with another node's horizon.
CREATE FUNCTION qm_events_horizon(tenant bigint) RETURNS xid8 LANGUAGE sql STABLE
  RETURN qm_events_horizon();
