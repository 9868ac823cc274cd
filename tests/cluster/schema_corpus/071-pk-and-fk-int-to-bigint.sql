-- destructive: 2
-- before
CREATE TABLE p (id int PRIMARY KEY);
CREATE TABLE c (p int REFERENCES p);
-- after
CREATE TABLE p (id bigint PRIMARY KEY);
CREATE TABLE c (p bigint REFERENCES p);
