build/obj/shared/rc.o: shared/rc.c shared/rc.h
shared/rc.h:
