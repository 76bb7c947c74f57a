-- The events horizon (0008) as PL/pgSQL. A SQL function that cannot be inlined is planned on
-- every call, and this one (a snapshot, its running transactions, pg_stat_activity) took about
-- 0.7 ms to plan and run on each call: every watermark look and every read of a tenant's events
-- calls it. PL/pgSQL keeps the plan of its statement for the connection's life, so a call costs
-- what running it costs (about 0.03 ms). Same result, same volatility: it reads the caller's
-- snapshot as before.
CREATE OR REPLACE FUNCTION qm_events_horizon() RETURNS xid8 LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT LEAST(pg_snapshot_xmax(s.snap), (
    SELECT min(x) FROM pg_snapshot_xip(s.snap) AS x
    WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
      WHERE a.backend_xid = x::xid AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database()))))
  FROM (SELECT pg_current_snapshot() AS snap) s);
END
$$;
