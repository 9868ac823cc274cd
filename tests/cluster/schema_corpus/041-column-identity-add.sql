-- expect: ADD GENERATED ALWAYS AS IDENTITY
-- destructive: 0
-- before
CREATE TABLE t (id int NOT NULL);
-- after
CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY);
