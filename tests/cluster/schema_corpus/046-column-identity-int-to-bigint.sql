-- expect: TYPE bigint
-- destructive: 1
-- before
CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
-- after
CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
