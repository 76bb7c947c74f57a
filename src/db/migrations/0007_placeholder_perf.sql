-- Placeholder in the perf branch only: this number belongs to another branch's migration. Delete this
-- file when that migration is merged (the loader refuses two files with one number).
SELECT 1;
