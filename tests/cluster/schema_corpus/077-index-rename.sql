-- expect: DROP INDEX public.old_name
-- destructive: 1
-- before
CREATE TABLE t (a int);
CREATE INDEX old_name ON t (a);
-- after
CREATE TABLE t (a int);
CREATE INDEX new_name ON t (a);
