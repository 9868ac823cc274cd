-- expect: DROP CONSTRAINT booking_during_excl
-- destructive: 1
-- before
CREATE TABLE booking (during tsrange, EXCLUDE USING gist (during WITH &&));
-- after
CREATE TABLE booking (during tsrange);
