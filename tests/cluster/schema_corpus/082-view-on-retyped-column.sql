-- expect: DROP VIEW public.v
-- expect: TYPE bigint
-- destructive: 1
-- before
CREATE TABLE t (a int, b int);
CREATE VIEW v AS SELECT a, b FROM t;
-- after
CREATE TABLE t (a bigint, b int);
CREATE VIEW v AS SELECT a, b FROM t;
