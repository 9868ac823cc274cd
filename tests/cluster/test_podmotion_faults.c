/*
 * test_podmotion_faults.c: the safety promise under failure, end to end with real agents and
 * CRIU (pmig_e2e.h). A fault is injected into one node agent (restarted with --fault: the dump,
 * the transfer, the restore's images, the handover's attach), or a process is killed midway (the
 * controller; the source's agent during a rollback). Every time the client that holds a
 * connection to the counter gets the next number afterwards, from the source after a rollback or
 * from the restored copy after a completion, and never both: the promise is kept.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counter.h"
#include "json.h"
#include "pmig_e2e.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(podmotion_faults, .fini = stop, .timeout = 240);

/* A counter that has counted to 1, with its policy. */
static int counter(const char *probe_port)
{
  pm_start(&E);
  pm_policy(&E, NULL);
  int fd = pm_counter(&E, "counter", probe_port);
  cr_assert_eq(pm_value(fd, "inc"), 1);
  return fd;
}

/* The migration ended Failed with reason, rolled back; the source serves the same client. */
static void rolled_back(int fd, const char *reason)
{
  bool failed = e2e_wait_phase(&E, "move", "Failed", 60000);
  cr_assert(failed, "did not fail: %s (%s)", e2e_phase(&E, "move"), e2e_describe(&E, "move"));
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Complete"), reason);
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "RollingBack"), "RolledBack");
  cr_expect_eq(pm_value(fd, "inc"), 2, "the source does not serve its client after the rollback");
  char *out = NULL;
  cr_expect_eq(e2e_kubectl(&E, &out, "get pod counter -o jsonpath='{.spec.nodeName}'"), 0);
  cr_expect_str_eq(out, "node-a");
  free(out);
  cJSON *m = e2e_get(&E, "move");
  const char *dest = json_get_str(m, "status.destinationPodName");
  if(dest) { /* a restored copy that was made is deleted */
    bool gone = false;
    for(int i = 0; i < 50 && !gone; i++) {
      out = NULL;
      gone = e2e_kubectl(&E, &out, "get pod %s", dest) != 0;
      free(out);
      if(!gone)
        e2e_sleep_ms(100);
    }
    cr_expect(gone, "the restored copy %s outlived the rollback", dest);
  }
  cJSON_Delete(m);
  close(fd);
}

Test(podmotion_faults, a_failed_checkpoint_rolls_back)
{
  int fd = counter("\"counter\"");
  e2e_agent_restart(&E, "node-a", "checkpoint");
  pm_move(&E, "move", "counter", NULL);
  rolled_back(fd, "CheckpointFailed");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Checkpointing"), "CheckpointFailed");
  cr_expect(strstr(e2e_cond_message(&E, "move", "Checkpointing"), "fault injected"), "%s",
            e2e_cond_message(&E, "move", "Checkpointing"));
}

Test(podmotion_faults, a_failed_transfer_rolls_back)
{
  int fd = counter("\"counter\"");
  e2e_agent_restart(&E, "node-a", "send");
  pm_move(&E, "move", "counter", NULL);
  rolled_back(fd, "TransferFailed");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "CheckpointComplete"), "CheckpointWritten");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Transferring"), "TransferFailed");
}

Test(podmotion_faults, a_failed_restore_rolls_back)
{
  int fd = counter("\"counter\"");
  e2e_agent_restart(&E, "node-b", "corrupt-restore");
  pm_move(&E, "move", "counter", NULL);
  rolled_back(fd, "RestoreFailed");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "TransferComplete"), "Transferred");
  cr_expect(strstr(e2e_cond_message(&E, "move", "Complete"), "does not match its digest"), "%s",
            e2e_cond_message(&E, "move", "Complete"));
}

Test(podmotion_faults, a_failed_handover_gives_the_address_back)
{
  int fd = counter("\"counter\"");
  e2e_agent_restart(&E, "node-b", "attach");
  pm_move(&E, "move", "counter", NULL);
  /* the source's link went down before the attach failed: the rollback brings it back */
  rolled_back(fd, "HandoverFailed");
  cr_expect_str_neq(e2e_cond_reason(&E, "move", "TrafficVerified"), "FlowsTransferred");
}

Test(podmotion_faults, the_controller_killed_midway_completes_the_move)
{
  int fd = counter("\"counter\"");
  pm_move(&E, "move", "counter", NULL);
  /* wherever it is when it dies, a new controller finishes it */
  for(int i = 0; i < 200; i++) {
    const char *ph = e2e_phase(&E, "move");
    if(strcmp(ph, "") && strcmp(ph, "Pending") && strcmp(ph, "Validating"))
      break;
    e2e_sleep_ms(10);
  }
  e2e_controller_kill(&E);
  e2e_controller_start(&E);
  cr_assert(e2e_wait_cond(&E, "move", "Complete", "True", NULL, 60000), "not completed: %s (%s)",
            e2e_phase(&E, "move"), e2e_describe(&E, "move"));
  cr_expect_eq(pm_value(fd, "inc"), 2, "the restored copy did not go on counting");
  close(fd);
}

Test(podmotion_faults, a_rollback_waits_for_the_source_agent)
{
  int fd = counter("7001"); /* the copy never passes: it stays verifying */
  pm_move(&E, "move", "counter", "  verification: {timeoutSeconds: 120}\n");
  cr_assert(e2e_wait_phase(&E, "move", "Verifying", 60000), "never verifying: %s",
            e2e_phase(&E, "move"));
  e2e_agent_stop(&E, "node-a", SIGKILL);
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch pmig move --type merge -p "
                                     "'{\"spec\":{\"cancel\":true}}'"), 0);
  /* the source cannot be released while its agent is away: the rollback holds, saying why */
  cr_assert(e2e_wait_phase(&E, "move", "RollingBack", 30000));
  bool said = false;
  for(int i = 0; i < 100 && !said; i++) {
    said = strstr(e2e_cond_message(&E, "move", "RollingBack"), "trying again") != NULL;
    if(!said)
      e2e_sleep_ms(100);
  }
  cr_expect(said, "%s", e2e_cond_message(&E, "move", "RollingBack"));
  cr_expect_str_eq(e2e_phase(&E, "move"), "RollingBack");
  e2e_agent_restart(&E, "node-a", NULL);
  cr_assert(e2e_wait_phase(&E, "move", "Cancelled", 30000), "not cancelled: %s",
            e2e_phase(&E, "move"));
  cr_expect_eq(pm_value(fd, "inc"), 2, "the source does not serve its client");
  close(fd);
}

/* A cancel that arrives while an agent works (a dump, a transfer made 3 s longer) is acted on
 * as soon as the call returns: rolled back, Cancelled, the source serving its client. */
static void cancel_during(const char *node, const char *fault, const char *phase)
{
  int fd = counter("\"counter\"");
  e2e_agent_restart(&E, node, fault);
  pm_move(&E, "move", "counter", NULL);
  cr_assert(e2e_wait_phase(&E, "move", phase, 30000), "never %s: %s", phase,
            e2e_phase(&E, "move"));
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch pmig move --type merge -p "
                                     "'{\"spec\":{\"cancel\":true}}'"), 0);
  cr_assert(e2e_wait_phase(&E, "move", "Cancelled", 30000), "not cancelled: %s (%s)",
            e2e_phase(&E, "move"), e2e_describe(&E, "move"));
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Complete"), "Cancelled");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "RollingBack"), "RolledBack");
  cr_expect_eq(pm_value(fd, "inc"), 2, "the source does not serve its client");
  close(fd);
}

Test(podmotion_faults, a_cancel_while_checkpointing_rolls_back)
{
  cancel_during("node-a", "slow-checkpoint", "Checkpointing");
}

Test(podmotion_faults, a_cancel_while_transferring_rolls_back)
{
  cancel_during("node-a", "slow-send", "Transferring");
}

/* In Restoring the controller asks the destination agent where the checkpoint is (made 3 s
 * longer): the restored copy, shielded, is deleted by the rollback. */
Test(podmotion_faults, a_cancel_while_restoring_rolls_back)
{
  cancel_during("node-b", "slow-state", "Restoring");
}
