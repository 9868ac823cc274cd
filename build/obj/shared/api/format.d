build/obj/shared/api/format.o: shared/api/format.c shared/api/format.h
shared/api/format.h:
