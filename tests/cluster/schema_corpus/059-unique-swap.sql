-- expect: DROP CONSTRAINT t_uk
-- expect: ADD CONSTRAINT t_uk UNIQUE (b)
-- destructive: 0
-- before
CREATE TABLE t (a int, b int, CONSTRAINT t_uk UNIQUE (a));
-- after
CREATE TABLE t (a int, b int, CONSTRAINT t_uk UNIQUE (b));
