build/obj/shared/jsonpatch.o: shared/jsonpatch.c shared/jsonpatch.h \
 /usr/include/cjson/cJSON.h shared/rc.h shared/strbuf.h
shared/jsonpatch.h:
/usr/include/cjson/cJSON.h:
shared/rc.h:
shared/strbuf.h:
