-- expect: DROP SCHEMA app
-- destructive: 1
-- before
CREATE SCHEMA app;
-- after
-- the public schema only
