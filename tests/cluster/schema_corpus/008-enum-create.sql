-- expect: CREATE TYPE public.mood AS ENUM
-- destructive: 0
-- before
-- after
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE person (name text, m mood);
