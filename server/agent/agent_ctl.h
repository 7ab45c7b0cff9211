/*
 * agent_ctl.h - the agent's control channel: a Unix socket in `dir`
 * (topo_agent_socket: <dir>/agent.sock) that the host's owners connect to, speaking the LEAF_*
 * messages of proto/wire_hand.h.  Owners never talk to etcd (CLUSTER.md
 * §1: one etcd client per host); this is how an owner asks for the leaf
 * txns of a move (agent_leaf.h) and how the agent hands an owner a move an
 * operator asked for.  Private to server/agent.
 *
 * The agent makes the socket itself when it starts (a restarted agent makes
 * it again; owners reconnect).  A connection says LEAF_HELLO (the owner's
 * pool and index on this host) before anything else; a frame over
 * AGENT_CTL_MAX_FRAME, one that does not decode, or a request before HELLO
 * closes it.  Replies go back on the connection the request came on; a
 * reply for a connection that closed meanwhile is dropped (the owner asks
 * again, or re-reads with LEAF_READ).  Output is bounded
 * (AGENT_CTL_MAX_OUT): a connection that does not read is closed.
 */
#ifndef HKV_AGENT_CTL_H
#define HKV_AGENT_CTL_H

#include <stdint.h>

#define AGENT_CTL_MAX_FRAME (64u * 1024)
#define AGENT_CTL_MAX_OUT (1u << 20)
#define AGENT_CTL_MAX_CONNS 512

struct agent;
struct agent_ctl;

/* Listens on topo_agent_socket().  NULL (logged) on
 * failure: the agent runs on, and no move can start on this host. */
struct agent_ctl *agent_ctl_start(struct agent *a);
/* Closes every connection and the socket (the file stays: the next agent
 * replaces it). */
void agent_ctl_stop(struct agent_ctl **c);
/* Called by the agent's tick (the leaf module's polls). */
void agent_ctl_tick(struct agent_ctl *c, int64_t now);

#endif
