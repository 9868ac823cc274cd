-- expect: EXCLUDE USING gist
-- destructive: 0
-- before
CREATE TABLE booking (room int, during tsrange);
-- after
CREATE TABLE booking (room int, during tsrange, EXCLUDE USING gist (during WITH &&));
