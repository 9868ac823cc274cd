-- expect: CREATE SEQUENCE public.t_ids
-- expect: SET DEFAULT nextval(
-- destructive: 0
-- before
CREATE TABLE t (id bigint);
-- after
CREATE SEQUENCE t_ids;
CREATE TABLE t (id bigint DEFAULT nextval('t_ids'));
