build/obj/shared/arena.o: shared/arena.c shared/arena.h \
 /usr/include/cjson/cJSON.h
shared/arena.h:
/usr/include/cjson/cJSON.h:
