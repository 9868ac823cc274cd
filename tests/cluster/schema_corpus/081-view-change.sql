-- expect: DROP VIEW public.v
-- expect: CREATE VIEW public.v
-- destructive: 0
-- before
CREATE TABLE t (a int, b int);
CREATE VIEW v AS SELECT a FROM t;
-- after
CREATE TABLE t (a int, b int);
CREATE VIEW v AS SELECT a, b FROM t;
