-- Archived processes (docs/people-api.md §4): hidden from the overview and refused to Mates as an
-- unknown ProcessKey, kept with their tasks and history; unarchiving brings them back.
ALTER TABLE processes ADD COLUMN archived_at timestamptz;
