/* termination.h: where a runner step leaves its JSON report (every step, preflight included):
 * the Pod's termination message (/dev/termination-log by default), which the controller reads
 * from the Pod's status; "-" writes it to stdout instead. A write that fails is logged, never
 * fatal: the step's exit code still says how it ended. */
#ifndef GW_RUNNER_TERMINATION_H
#define GW_RUNNER_TERMINATION_H

/* How every runner step ends (the controller's step driver reads them: a Transient exit, or
 * no report, is retried within the step's attempts). */
#define RUNNER_EXIT_PASSED 0
#define RUNNER_EXIT_FAILED 1
#define RUNNER_EXIT_TRANSIENT 2
/* The Job asks for a runner protocol this runner does not speak (ptah-migrate --protocol): it
 * read and changed nothing, and a retry with the same image cannot help (docs/api/ptah.md:
 * RunnerProtocolMismatch). */
#define RUNNER_EXIT_PROTOCOL 3
/* A Ptah runner whose result could not be delivered by the credential it holds (its dry-run
 * record refused): it ran nothing, delivered nothing, and its report says CredentialFailed. */
#define RUNNER_EXIT_CREDENTIAL 4
#define RUNNER_REPORT_MAX 4096 /* a Kubernetes termination message */

/* path NULL: /dev/termination-log. */
void runner_report_write(const char *path, const char *report);

#endif
