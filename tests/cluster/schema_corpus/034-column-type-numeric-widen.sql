-- expect: TYPE numeric(12,2)
-- destructive: 0
-- before
CREATE TABLE t (p numeric(8,2));
-- after
CREATE TABLE t (p numeric(12,2));
