-- expect: DROP CONSTRAINT t_email_key
-- destructive: 1
-- before
CREATE TABLE t (email text UNIQUE);
-- after
CREATE TABLE t (email text);
