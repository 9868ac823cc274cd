-- expect: CREATE VIEW rpt.v
-- destructive: 0
-- before
CREATE SCHEMA rpt;
CREATE TABLE t (a int);
-- after
CREATE SCHEMA rpt;
CREATE TABLE t (a int);
CREATE VIEW rpt.v AS SELECT a FROM public.t;
