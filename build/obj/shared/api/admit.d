build/obj/shared/api/admit.o: shared/api/admit.c shared/api/api.h \
 /usr/include/cjson/cJSON.h shared/api/fielderr.h shared/api/schema.h \
 shared/api/format.h shared/policy.h shared/rc.h shared/rc.h \
 shared/json.h shared/jsonpatch.h shared/strbuf.h
shared/api/api.h:
/usr/include/cjson/cJSON.h:
shared/api/fielderr.h:
shared/api/schema.h:
shared/api/format.h:
shared/policy.h:
shared/rc.h:
shared/rc.h:
shared/json.h:
shared/jsonpatch.h:
shared/strbuf.h:
