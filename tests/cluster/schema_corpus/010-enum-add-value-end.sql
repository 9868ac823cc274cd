-- expect: ADD VALUE IF NOT EXISTS 'happy' AFTER 'ok'
-- destructive: 0
-- before
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TABLE person (m mood);
-- after
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE person (m mood);
