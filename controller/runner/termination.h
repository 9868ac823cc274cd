/* termination.h: where a runner step leaves its JSON report (every step, preflight included):
 * the Pod's termination message (/dev/termination-log by default), which the controller reads
 * from the Pod's status; "-" writes it to stdout instead. A write that fails is logged, never
 * fatal: the step's exit code still says how it ended. */
#ifndef GW_RUNNER_TERMINATION_H
#define GW_RUNNER_TERMINATION_H

/* path NULL: /dev/termination-log. */
void runner_report_write(const char *path, const char *report);

#endif
