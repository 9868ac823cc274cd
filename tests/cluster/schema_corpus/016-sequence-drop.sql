-- expect: DROP SEQUENCE public.ids
-- destructive: 1
-- before
CREATE SEQUENCE ids;
-- after
-- the public schema only
