-- expect: DROP IDENTITY
-- destructive: 0
-- before
CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY);
-- after
CREATE TABLE t (id int NOT NULL);
