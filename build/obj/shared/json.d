build/obj/shared/json.o: shared/json.c shared/json.h \
 /usr/include/cjson/cJSON.h shared/rc.h shared/strbuf.h
shared/json.h:
/usr/include/cjson/cJSON.h:
shared/rc.h:
shared/strbuf.h:
