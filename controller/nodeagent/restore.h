/*
 * restore.h: the contract between the PodMotion controller, the node agents and a container
 * runtime that restores a Pod from a checkpoint (docs/dev/podmotion-runtime.md, "Restore").
 *
 * The controller creates the destination Pod on the destination node with
 *   RESTORE_FROM_ANNOTATION  the checkpoint's directory on that node, as the destination agent
 *                            received it: one sub-directory per container, named after it
 *   RESTORE_IP_ANNOTATION    the source Pod's address, which moves with the Pod
 *   RESTORE_MAC_ANNOTATION   the source Pod's MAC address, so that no neighbour cache changes
 * The runtime then makes the sandbox with that address and MAC, shielded (netns.h), and starts
 * each container by restoring DIR/NAME instead of executing its command. The Pod may be created
 * before its checkpoint exists, with the address and MAC but no RESTORE_FROM_ANNOTATION: the
 * runtime makes the sandbox and its containers wait until an update of the Pod names the
 * directory (the controller makes the sandbox while the source is dumped, outside the freeze).
 * When a container starts from its checkpoint, standard output and
 * error go to the new container's log in place of the file named in DIR/NAME/RESTORE_STDIO (the
 * path the dumped process had open, written by the source agent). Once the tree runs, the
 * runtime writes DIR/NAME/RESTORE_DONE: {"pid":N,"restoredAtMs":T,"durationMs":D} (T: wall
 * clock, milliseconds since the epoch), which the destination agent reports. A container that
 * ends later starts again from its command, as a restart always does.
 */
#ifndef GW_AGENT_RESTORE_H
#define GW_AGENT_RESTORE_H

#define RESTORE_FROM_ANNOTATION "migration.podmotion.io/restore-from"
#define RESTORE_IP_ANNOTATION "migration.podmotion.io/pod-ip"
#define RESTORE_MAC_ANNOTATION "migration.podmotion.io/pod-mac"
#define RESTORE_STDIO "stdio"
#define RESTORE_DONE "restored.json"

#endif
