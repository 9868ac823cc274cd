-- expect: lower(email)
-- destructive: 0
-- before
CREATE TABLE t (email text);
-- after
CREATE TABLE t (email text);
CREATE UNIQUE INDEX t_email_lower ON t (lower(email));
