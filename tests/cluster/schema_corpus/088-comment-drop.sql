-- expect: COMMENT ON TABLE public.t IS NULL
-- destructive: 0
-- before
CREATE TABLE t (id int);
COMMENT ON TABLE t IS 'old';
COMMENT ON COLUMN t.id IS 'old too';
-- after
CREATE TABLE t (id int);
