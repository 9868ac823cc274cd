build/obj/shared/api/fielderr.o: shared/api/fielderr.c \
 shared/api/fielderr.h
shared/api/fielderr.h:
