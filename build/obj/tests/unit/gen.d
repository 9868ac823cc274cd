build/obj/tests/unit/gen.o: tests/unit/gen.c tests/unit/gen.h \
 /usr/include/cjson/cJSON.h shared/api/api.h shared/api/fielderr.h \
 shared/api/schema.h shared/api/format.h shared/policy.h shared/rc.h \
 shared/rc.h
tests/unit/gen.h:
/usr/include/cjson/cJSON.h:
shared/api/api.h:
shared/api/fielderr.h:
shared/api/schema.h:
shared/api/format.h:
shared/policy.h:
shared/rc.h:
shared/rc.h:
