build/obj/tests/unit/test_roundtrip.o: tests/unit/test_roundtrip.c \
 shared/api/api.h /usr/include/cjson/cJSON.h shared/api/fielderr.h \
 shared/api/schema.h shared/api/format.h shared/policy.h shared/rc.h \
 shared/rc.h tests/unit/gen.h shared/json.h
shared/api/api.h:
/usr/include/cjson/cJSON.h:
shared/api/fielderr.h:
shared/api/schema.h:
shared/api/format.h:
shared/policy.h:
shared/rc.h:
shared/rc.h:
tests/unit/gen.h:
shared/json.h:
