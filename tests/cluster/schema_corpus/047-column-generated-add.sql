-- expect: GENERATED ALWAYS AS
-- destructive: 0
-- before
CREATE TABLE t (a int, b int);
-- after
CREATE TABLE t (a int, b int, s int GENERATED ALWAYS AS (a + b) STORED);
