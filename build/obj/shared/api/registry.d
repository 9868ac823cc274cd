build/obj/shared/api/registry.o: shared/api/registry.c shared/api/api.h \
 /usr/include/cjson/cJSON.h shared/api/fielderr.h shared/api/schema.h \
 shared/api/format.h shared/policy.h shared/rc.h shared/rc.h
shared/api/api.h:
/usr/include/cjson/cJSON.h:
shared/api/fielderr.h:
shared/api/schema.h:
shared/api/format.h:
shared/policy.h:
shared/rc.h:
shared/rc.h:
