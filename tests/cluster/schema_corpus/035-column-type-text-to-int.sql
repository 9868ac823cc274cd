-- expect: DROP DEFAULT
-- expect: TYPE integer USING n::integer
-- expect: SET DEFAULT 0
-- destructive: 1
-- before
CREATE TABLE t (n text DEFAULT '0');
INSERT INTO t VALUES ('42');
-- after
CREATE TABLE t (n int DEFAULT 0);
