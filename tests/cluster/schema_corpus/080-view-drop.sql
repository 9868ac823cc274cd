-- expect: DROP VIEW public.v
-- destructive: 1
-- before
CREATE TABLE t (a int);
CREATE VIEW v AS SELECT a FROM t;
-- after
CREATE TABLE t (a int);
