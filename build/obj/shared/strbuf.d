build/obj/shared/strbuf.o: shared/strbuf.c shared/strbuf.h shared/rc.h
shared/strbuf.h:
shared/rc.h:
