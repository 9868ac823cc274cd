-- expect: DROP CONSTRAINT c_p_fkey
-- expect: DROP CONSTRAINT p_pkey
-- expect: ADD CONSTRAINT c_p_fkey
-- destructive: 1
-- before
CREATE TABLE p (id int PRIMARY KEY, code int NOT NULL);
CREATE TABLE c (p int REFERENCES p);
-- after
CREATE TABLE p (id int NOT NULL, code int NOT NULL, CONSTRAINT p_key PRIMARY KEY (id));
CREATE TABLE c (p int REFERENCES p);
