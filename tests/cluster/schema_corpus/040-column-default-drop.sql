-- expect: DROP DEFAULT
-- destructive: 0
-- before
CREATE TABLE t (n int DEFAULT 1);
-- after
CREATE TABLE t (n int);
