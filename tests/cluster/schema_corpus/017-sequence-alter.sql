-- expect: ALTER SEQUENCE public.ids
-- destructive: 0
-- before
CREATE SEQUENCE ids;
-- after
CREATE SEQUENCE ids INCREMENT BY 10 MAXVALUE 100000 CACHE 5 CYCLE;
