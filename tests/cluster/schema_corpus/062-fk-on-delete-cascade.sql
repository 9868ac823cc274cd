-- expect: ON DELETE CASCADE
-- destructive: 0
-- before
CREATE TABLE p (id int PRIMARY KEY);
CREATE TABLE c (p int REFERENCES p);
-- after
CREATE TABLE p (id int PRIMARY KEY);
CREATE TABLE c (p int REFERENCES p ON DELETE CASCADE);
