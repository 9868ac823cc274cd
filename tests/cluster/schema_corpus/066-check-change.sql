-- expect: DROP CONSTRAINT pos
-- expect: CHECK ((n >= 0))
-- destructive: 0
-- before
CREATE TABLE t (n int, CONSTRAINT pos CHECK (n > 0));
-- after
CREATE TABLE t (n int, CONSTRAINT pos CHECK (n >= 0));
