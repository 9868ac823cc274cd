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

#endif
