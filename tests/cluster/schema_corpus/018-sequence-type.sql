-- expect: AS bigint
-- destructive: 0
-- before
CREATE SEQUENCE ids AS integer;
-- after
CREATE SEQUENCE ids AS bigint;
