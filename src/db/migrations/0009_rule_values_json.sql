-- A rule's value keeps the text it was given: a table rule's rows are objects whose keys are its
-- columns, and jsonb stores object keys in its own order (shorter keys first), so a table read
-- back had its columns reordered, for people and for Mates (GetRules). json keeps the text as
-- written; nothing queries inside rule values, so jsonb's operators are not needed.
ALTER TABLE process_rules ALTER COLUMN value TYPE json USING value::json;
