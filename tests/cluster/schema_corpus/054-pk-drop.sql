-- expect: DROP CONSTRAINT t_pkey
-- destructive: 1
-- before
CREATE TABLE t (id int PRIMARY KEY);
-- after
CREATE TABLE t (id int NOT NULL);
