-- expect: ADD COLUMN b integer
-- destructive: 0
-- before
CREATE TABLE t (a int, c int);
-- after
CREATE TABLE t (a int, b int, c int);
