-- expect: DROP EXTENSION hstore
-- destructive: 2
-- before
CREATE EXTENSION hstore;
CREATE TABLE kv (h hstore);
-- after
-- the public schema only
