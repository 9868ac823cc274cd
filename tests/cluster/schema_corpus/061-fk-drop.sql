-- expect: DROP CONSTRAINT c_p_fkey
-- destructive: 1
-- before
CREATE TABLE p (id int PRIMARY KEY);
CREATE TABLE c (p int REFERENCES p);
-- after
CREATE TABLE p (id int PRIMARY KEY);
CREATE TABLE c (p int);
