-- expect: CREATE SEQUENCE public.ids
-- destructive: 0
-- before
-- after
CREATE SEQUENCE ids START 100 INCREMENT 5;
