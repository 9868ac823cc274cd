-- expect: UNIQUE (email)
-- destructive: 0
-- before
CREATE TABLE t (email text);
-- after
CREATE TABLE t (email text UNIQUE);
