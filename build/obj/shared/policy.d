build/obj/shared/policy.o: shared/policy.c shared/policy.h \
 /usr/include/cjson/cJSON.h shared/rc.h shared/api/format.h shared/json.h
shared/policy.h:
/usr/include/cjson/cJSON.h:
shared/rc.h:
shared/api/format.h:
shared/json.h:
