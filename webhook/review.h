/*
 * review.h: AdmissionReview and ConversionReview, decoded and answered.
 *
 * review_admission() takes the body of a POST to /mutate or /validate, review_conversion() the
 * body of a POST to /convert. Both fill an HTTP response: 200 with the review's response, or 400
 * with a one-line reason when the body is not a review this server answers. A kind the webhook
 * does not own is allowed untouched (and counted as "ignored").
 * All JSON work for one request happens in one arena, freed before returning.
 */
#ifndef GW_REVIEW_H
#define GW_REVIEW_H

#include "metrics.h"
#include "server.h"

void review_admission(enum wh_endpoint ep, const struct http_request *req,
                      struct http_response *resp);
void review_conversion(const struct http_request *req, struct http_response *resp);
/* The allocator settings the handlers run with (the server's main, and the in-process
 * benchmark, bench/webhook/handler.c): a review allocates up to a few MiB and frees it all; glibc
 * would hand the top of the heap back to the kernel after each one and fault it in again on the
 * next (a fifth of a 100-object conversion's CPU). Keeping up to 16 MiB of free heap, and
 * serving blocks up to 4 MiB from it rather than from fresh mappings, reuses those pages; the
 * resident size stays the peak of one review per turn. Two malloc arenas at most: every
 * connection has a thread, and glibc would give each of up to 8 per core its own heap. */
void review_tune_malloc(void);

#endif
