-- destructive: 0
-- before
CREATE SCHEMA app;
-- after
CREATE SCHEMA app;
CREATE TYPE app.color AS ENUM ('red', 'green');
CREATE TABLE app.paint (c app.color NOT NULL);
