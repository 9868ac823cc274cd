-- expect: DROP CONSTRAINT t_n_check
-- destructive: 1
-- before
CREATE TABLE t (n int CHECK (n > 0));
-- after
CREATE TABLE t (n int);
