-- destructive: 0
-- before
CREATE SCHEMA app;
CREATE TABLE app.t (id int PRIMARY KEY, n int);
CREATE INDEX t_n ON app.t (n);
CREATE VIEW app.v AS SELECT id FROM app.t;
CREATE SEQUENCE app.s;
CREATE TYPE app.e AS ENUM ('x');
CREATE EXTENSION citext;
-- after
CREATE SCHEMA app;
CREATE TABLE app.t (id int PRIMARY KEY, n int);
CREATE INDEX t_n ON app.t (n);
CREATE VIEW app.v AS SELECT id FROM app.t;
CREATE SEQUENCE app.s;
CREATE TYPE app.e AS ENUM ('x');
CREATE EXTENSION citext;
COMMENT ON SCHEMA app IS 'the app';
COMMENT ON TABLE app.t IS 'a table';
COMMENT ON COLUMN app.t.n IS 'a number';
COMMENT ON INDEX app.t_n IS 'an index';
COMMENT ON VIEW app.v IS 'a view';
COMMENT ON COLUMN app.v.id IS 'a view column';
COMMENT ON SEQUENCE app.s IS 'a sequence';
COMMENT ON TYPE app.e IS 'an enum';
COMMENT ON CONSTRAINT t_pkey ON app.t IS 'a key';
COMMENT ON EXTENSION citext IS 'case-insensitive text';
