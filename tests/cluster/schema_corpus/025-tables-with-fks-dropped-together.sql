-- destructive: 3
-- before
CREATE TABLE a (id int PRIMARY KEY);
CREATE TABLE b (id int PRIMARY KEY, a int REFERENCES a);
CREATE TABLE c (b int REFERENCES b, a int REFERENCES a);
-- after
-- the public schema only
