-- expect: DROP COLUMN s
-- destructive: 1
-- before
CREATE TABLE t (a int, s int);
-- after
CREATE TABLE t (a int, s int GENERATED ALWAYS AS (a * 2) STORED);
