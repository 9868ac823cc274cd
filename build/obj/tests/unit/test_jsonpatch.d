build/obj/tests/unit/test_jsonpatch.o: tests/unit/test_jsonpatch.c \
 shared/json.h /usr/include/cjson/cJSON.h shared/rc.h shared/jsonpatch.h \
 shared/strbuf.h
shared/json.h:
/usr/include/cjson/cJSON.h:
shared/rc.h:
shared/jsonpatch.h:
shared/strbuf.h:
