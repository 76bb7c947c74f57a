-- How the tenant's numbers in strings are read (docs/mate-api.md §3 "numbers"): 'point', a '.'
-- decimal point and no thousands separators (as before this setting); 'comma', a ',' decimal
-- comma with '.' thousands separators ("1234,56", "1.234,56"), as robots on Danish machines
-- format numbers.
ALTER TABLE tenants ADD COLUMN number_format text NOT NULL DEFAULT 'point' CHECK (number_format IN ('point', 'comma'));
