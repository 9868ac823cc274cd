build/obj/shared/api/migrationpolicy.o: shared/api/migrationpolicy.c \
 shared/api/api.h /usr/include/cjson/cJSON.h shared/api/fielderr.h \
 shared/api/schema.h shared/api/format.h shared/policy.h shared/rc.h \
 shared/rc.h shared/api/podmotion_common.h shared/json.h
shared/api/api.h:
/usr/include/cjson/cJSON.h:
shared/api/fielderr.h:
shared/api/schema.h:
shared/api/format.h:
shared/policy.h:
shared/rc.h:
shared/rc.h:
shared/api/podmotion_common.h:
shared/json.h:
