-- expect: TYPE public.mood USING m::public.mood
-- destructive: 1
-- before
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TABLE person (m text);
INSERT INTO person VALUES ('ok');
-- after
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TABLE person (m mood);
