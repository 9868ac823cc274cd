-- expect: SET NOT NULL
-- destructive: 0
-- before
CREATE TABLE t (n int);
-- after
CREATE TABLE t (n int NOT NULL);
