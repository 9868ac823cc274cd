-- expect: COMMENT ON VIEW public.v IS 'kept'
-- destructive: 0
-- before
CREATE TABLE t (a int, b int);
CREATE VIEW v AS SELECT a FROM t;
COMMENT ON VIEW v IS 'kept';
-- after
CREATE TABLE t (a int, b int);
CREATE VIEW v AS SELECT a, b FROM t;
COMMENT ON VIEW v IS 'kept';
