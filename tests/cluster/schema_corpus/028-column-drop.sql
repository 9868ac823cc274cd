-- expect: DROP COLUMN note
-- destructive: 1
-- before
CREATE TABLE t (id int, note text);
-- after
CREATE TABLE t (id int);
