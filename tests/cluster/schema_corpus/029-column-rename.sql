-- expect: DROP COLUMN fullname
-- expect: ADD COLUMN full_name text
-- destructive: 1
-- before
CREATE TABLE t (id int, fullname text);
-- after
CREATE TABLE t (id int, full_name text);
