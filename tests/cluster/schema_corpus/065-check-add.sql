-- expect: CHECK ((n > 0))
-- destructive: 0
-- before
CREATE TABLE t (n int);
-- after
CREATE TABLE t (n int CHECK (n > 0));
