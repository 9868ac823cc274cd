-- expect: DROP COLUMN b
-- destructive: 1
-- before
CREATE TABLE t (a int, b int);
CREATE VIEW v AS SELECT a, b FROM t;
-- after
CREATE TABLE t (a int);
CREATE VIEW v AS SELECT a FROM t;
