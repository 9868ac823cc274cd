-- expect: COMMENT ON COLUMN public.t.s IS 'sum'
-- destructive: 1
-- before
CREATE TABLE t (a int, s int GENERATED ALWAYS AS (a) STORED);
COMMENT ON COLUMN t.s IS 'sum';
-- after
CREATE TABLE t (a int, s int GENERATED ALWAYS AS (a + 1) STORED);
COMMENT ON COLUMN t.s IS 'sum';
