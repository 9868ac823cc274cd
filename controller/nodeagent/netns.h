/*
 * netns.h: the node agent's hands on a Pod's network namespace (given as an nsfs path such as
 * /proc/PID/ns/net or /run/netns/NAME). Each call runs `nft` or `ip` inside the namespace
 * (criu_run's child enters it before exec) and says what failed in the tool's own words.
 * docs/dev/podmotion-runtime.md explains why each exists.
 *
 *   the shield   nftables table `inet godwit_shield`: every TCP segment in or out of the Pod
 *                dropped except over lo; with arp, also table `arp godwit_shield`, every ARP
 *                packet dropped. Raised on the source before the dump (nothing reaches or
 *                leaves the frozen copy's sockets, so its state stays the checkpoint's) and on
 *                a restored Pod's sandbox before its address exists (it answers nobody, not
 *                even ARP, while the source still owns the address). Lowering the restored
 *                Pod's shield is the moment TCP ownership moves.
 *   the link     `ip link set DEV up|down`: the source's interface goes down at the handover
 *                (the bridge forgets its port, the address is the restored Pod's), up again on
 *                a rollback.
 *   the probe    a TCP connection (and an HTTP GET) to ADDRESS:PORT made from inside the
 *                namespace: a shielded Pod is reached over lo only.
 *
 * All are idempotent: raising a raised shield, lowering a lowered one, setting a link to the
 * state it is in succeed.
 */
#ifndef GW_AGENT_NETNS_H
#define GW_AGENT_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

#define NA_SHIELD_TABLE "godwit_shield"

gw_rc na_shield_raise(const char *netns, bool arp, char *err, size_t errlen) GW_MUST_CHECK;
gw_rc na_shield_lower(const char *netns, char *err, size_t errlen) GW_MUST_CHECK;
/* Whether the TCP shield is up (false also when the namespace cannot be entered). */
bool na_shield_up(const char *netns);

gw_rc na_link_set(const char *netns, const char *dev, bool up, char *err,
                  size_t errlen) GW_MUST_CHECK;
/* The interface's MAC address ("0a:1b:...") and first IPv4 address into mac and ip. */
gw_rc na_link_addr(const char *netns, const char *dev, char *mac, size_t maclen, char *ip,
                   size_t iplen, char *err, size_t errlen) GW_MUST_CHECK;

struct na_probe {
  const char *address; /* IPv4 */
  int port;
  const char *http_path; /* NULL: a TCP connection is the probe */
  bool https;            /* not supported: the probe says so */
  long timeout_ms;
};
/* GW_OK when the probe passed; else an rc with err saying what was seen. */
gw_rc na_probe_run(const char *netns, const struct na_probe *p, char *err,
                   size_t errlen) GW_MUST_CHECK;

#endif
