-- expect: DROP NOT NULL
-- destructive: 0
-- before
CREATE TABLE t (n int NOT NULL);
-- after
CREATE TABLE t (n int);
