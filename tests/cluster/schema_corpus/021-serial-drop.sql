-- expect: DROP COLUMN id
-- destructive: 1
-- before
CREATE TABLE t (name text, id serial);
-- after
CREATE TABLE t (name text);
