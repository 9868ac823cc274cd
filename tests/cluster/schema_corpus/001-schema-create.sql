-- expect: CREATE SCHEMA app
-- destructive: 0
-- before
-- after
CREATE SCHEMA app;
