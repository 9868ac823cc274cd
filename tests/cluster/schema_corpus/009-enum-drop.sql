-- expect: DROP TYPE public.mood
-- destructive: 2
-- before
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TABLE person (name text, m mood);
-- after
CREATE TABLE person (name text);
