build/obj/tests/unit/test_migrationpolicy.o: \
 tests/unit/test_migrationpolicy.c tests/unit/apitest.h \
 /usr/include/cjson/cJSON.h shared/api/api.h shared/api/fielderr.h \
 shared/api/schema.h shared/api/format.h shared/policy.h shared/rc.h \
 shared/rc.h shared/json.h
tests/unit/apitest.h:
/usr/include/cjson/cJSON.h:
shared/api/api.h:
shared/api/fielderr.h:
shared/api/schema.h:
shared/api/format.h:
shared/policy.h:
shared/rc.h:
shared/rc.h:
shared/json.h:
