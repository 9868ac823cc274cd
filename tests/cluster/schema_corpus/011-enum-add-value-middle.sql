-- expect: ADD VALUE IF NOT EXISTS 'medium' BEFORE 'large'
-- destructive: 0
-- before
CREATE TYPE size AS ENUM ('small', 'large');
-- after
CREATE TYPE size AS ENUM ('small', 'medium', 'large');
