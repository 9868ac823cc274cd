build/obj/tests/unit/test_strbuf.o: tests/unit/test_strbuf.c \
 shared/strbuf.h shared/rc.h
shared/strbuf.h:
shared/rc.h:
