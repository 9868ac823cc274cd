-- expect: DROP TABLE public.customer
-- expect: CREATE TABLE public.client
-- destructive: 1
-- before
CREATE TABLE customer (id int PRIMARY KEY);
-- after
CREATE TABLE client (id int PRIMARY KEY);
