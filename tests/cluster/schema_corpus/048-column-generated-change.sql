-- expect: DROP COLUMN s
-- expect: ADD COLUMN s integer GENERATED ALWAYS AS ((a * b)) STORED
-- destructive: 1
-- before
CREATE TABLE t (a int, b int, s int GENERATED ALWAYS AS (a + b) STORED);
-- after
CREATE TABLE t (a int, b int, s int GENERATED ALWAYS AS (a * b) STORED);
