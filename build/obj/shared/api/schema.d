build/obj/shared/api/schema.o: shared/api/schema.c shared/api/schema.h \
 /usr/include/cjson/cJSON.h shared/api/fielderr.h shared/api/format.h \
 shared/json.h shared/rc.h
shared/api/schema.h:
/usr/include/cjson/cJSON.h:
shared/api/fielderr.h:
shared/api/format.h:
shared/json.h:
shared/rc.h:
