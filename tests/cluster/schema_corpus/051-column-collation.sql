-- expect: COLLATE pg_catalog."C"
-- destructive: 0
-- before
CREATE TABLE t (name text);
-- after
CREATE TABLE t (name text COLLATE "C");
