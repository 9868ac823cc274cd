-- expect: DROP INDEX public.t_a
-- expect: WHERE (NOT active)
-- destructive: 0
-- before
CREATE TABLE t (a int, active boolean);
CREATE INDEX t_a ON t (a) WHERE active;
-- after
CREATE TABLE t (a int, active boolean);
CREATE INDEX t_a ON t (a) WHERE NOT active;
