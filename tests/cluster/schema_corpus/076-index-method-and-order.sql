-- expect: USING gin
-- destructive: 0
-- before
CREATE TABLE t (a int, j jsonb);
CREATE INDEX t_a ON t (a);
-- after
CREATE TABLE t (a int, j jsonb);
CREATE INDEX t_a ON t (a DESC NULLS LAST);
CREATE INDEX t_j ON t USING gin (j);
