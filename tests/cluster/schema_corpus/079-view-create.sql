-- expect: CREATE VIEW public.v AS
-- destructive: 0
-- before
CREATE TABLE t (a int, b text);
-- after
CREATE TABLE t (a int, b text);
CREATE VIEW v AS SELECT a FROM t WHERE b IS NOT NULL;
