-- expect: ADD CONSTRAINT t_pkey PRIMARY KEY (id)
-- destructive: 0
-- before
CREATE TABLE t (id int NOT NULL);
-- after
CREATE TABLE t (id int PRIMARY KEY);
