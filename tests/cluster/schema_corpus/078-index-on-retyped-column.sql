-- expect: TYPE bigint
-- destructive: 1
-- before
CREATE TABLE t (a int);
CREATE INDEX t_a ON t (a);
-- after
CREATE TABLE t (a bigint);
CREATE INDEX t_a ON t (a);
