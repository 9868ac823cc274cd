-- expect: DROP VIEW public.v3
-- expect: DROP VIEW public.v1
-- destructive: 0
-- before
CREATE TABLE t (a int, b int);
CREATE VIEW v1 AS SELECT a, b FROM t;
CREATE VIEW v2 AS SELECT a FROM v1;
CREATE VIEW v3 AS SELECT count(*) AS n FROM v2;
-- after
CREATE TABLE t (a int, b int);
CREATE VIEW v1 AS SELECT a, b, a + b AS s FROM t;
CREATE VIEW v2 AS SELECT a FROM v1;
CREATE VIEW v3 AS SELECT count(*) AS n FROM v2;
