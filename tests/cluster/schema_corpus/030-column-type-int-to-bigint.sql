-- expect: TYPE bigint USING n::bigint
-- destructive: 1
-- before
CREATE TABLE t (n int);
INSERT INTO t VALUES (7);
-- after
CREATE TABLE t (n bigint);
