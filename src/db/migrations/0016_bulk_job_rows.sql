-- The rows of an import job (docs/people-api.md §5, src/bulk/jobs.ts): an import larger than one
-- chunk is checked in its request, then created by a bulk job (action 'import') chunk by chunk.
-- The request stages its checked rows here, one row per chunk of the job (`seq`: the index in the
-- file's list of rows of the chunk's first row; `items`: the chunk's rows as JSON text, each with
-- its row number in the file and the prepared task), in the transaction that records the job, so
-- a resumed job reads exactly the rows it was asked to create. `items` is text, not jsonb: it is
-- only ever read whole, and text is written in half the time of jsonb on the embedded store. The
-- job's cursor counts the rows done; the staged rows go when the job ends (or with the job when
-- it is purged).
CREATE TABLE bulk_job_rows (
  tenant_id  bigint NOT NULL,
  job_id     text NOT NULL,
  seq        integer NOT NULL,
  items      text NOT NULL,
  PRIMARY KEY (tenant_id, job_id, seq),
  FOREIGN KEY (tenant_id, job_id) REFERENCES bulk_jobs (tenant_id, id) ON DELETE CASCADE
);
