-- expect: DROP TABLE public.t
-- destructive: 1
-- before
CREATE TABLE t (id int);
CREATE TABLE keep (id int);
-- after
CREATE TABLE keep (id int);
