-- expect: CREATE INDEX t_b ON public.t USING btree (b)
-- destructive: 0
-- before
CREATE TABLE t (a int, b text);
-- after
CREATE TABLE t (a int, b text);
CREATE INDEX t_b ON t (b);
