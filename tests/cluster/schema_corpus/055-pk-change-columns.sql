-- expect: DROP CONSTRAINT t_pkey
-- expect: PRIMARY KEY (a, b)
-- destructive: 0
-- before
CREATE TABLE t (a int NOT NULL, b int NOT NULL, PRIMARY KEY (a));
-- after
CREATE TABLE t (a int NOT NULL, b int NOT NULL, PRIMARY KEY (a, b));
