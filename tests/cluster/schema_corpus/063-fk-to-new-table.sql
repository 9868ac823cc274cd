-- destructive: 0
-- before
CREATE TABLE c (p int);
-- after
CREATE TABLE p (id int PRIMARY KEY);
CREATE TABLE c (p int REFERENCES p);
