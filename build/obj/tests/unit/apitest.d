build/obj/tests/unit/apitest.o: tests/unit/apitest.c tests/unit/apitest.h \
 /usr/include/cjson/cJSON.h shared/api/api.h shared/api/fielderr.h \
 shared/api/schema.h shared/api/format.h shared/policy.h shared/rc.h \
 shared/rc.h shared/json.h shared/jsonpatch.h shared/strbuf.h
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
shared/jsonpatch.h:
shared/strbuf.h:
