-- expect: DROP TABLE public.t
-- expect: CREATE TABLE store.t
-- destructive: 1
-- before
CREATE SCHEMA store;
CREATE TABLE t (id int);
-- after
CREATE SCHEMA store;
CREATE TABLE store.t (id int);
