-- expect: WITH SCHEMA ext
-- destructive: 0
-- before
CREATE SCHEMA ext;
-- after
CREATE SCHEMA ext;
CREATE EXTENSION pg_trgm WITH SCHEMA ext;
