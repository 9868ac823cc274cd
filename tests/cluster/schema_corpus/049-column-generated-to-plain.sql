-- expect: DROP EXPRESSION
-- destructive: 0
-- before
CREATE TABLE t (a int, s int GENERATED ALWAYS AS (a * 2) STORED);
-- after
CREATE TABLE t (a int, s int);
