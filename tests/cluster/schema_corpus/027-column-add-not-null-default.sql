-- expect: ADD COLUMN flag boolean DEFAULT false NOT NULL
-- destructive: 0
-- before
CREATE TABLE t (id int);
INSERT INTO t VALUES (1);
-- after
CREATE TABLE t (id int, flag boolean NOT NULL DEFAULT false);
