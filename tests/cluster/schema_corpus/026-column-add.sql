-- expect: ADD COLUMN note text
-- destructive: 0
-- before
CREATE TABLE t (id int);
-- after
CREATE TABLE t (id int, note text);
