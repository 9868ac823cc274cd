-- expect: TYPE character varying(10)
-- destructive: 1
-- before
CREATE TABLE t (v varchar(50));
-- after
CREATE TABLE t (v varchar(10));
