-- expect: TYPE text
-- destructive: 0
-- before
CREATE TABLE t (v varchar(10));
-- after
CREATE TABLE t (v text);
