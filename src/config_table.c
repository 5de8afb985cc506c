/*
 * config_table.c - every RCOLL_* variable: name, default, meaning.
 * rcoll_info prints these tables with current values, and the README's table
 * is generated from them (tools/rcoll_info --markdown).
 */
#include <stddef.h>
#include "config.h"

#define F(_field) offsetof(rcoll_config_t, _field)

static const rcoll_config_entry_t core_table[] = {
    { "LOG_LEVEL", "warn", "Log verbosity: error, warn, info, debug or trace",
      RCOLL_CONFIG_LOGLEVEL, F(log_level), NULL, 1 },
    { "TIMEOUT", "300", "Deadline in seconds for any single wait (a collective, connection "
      "set-up, the bootstrap); 0 waits forever. On expiry the call fails with RCOLL_ERR_TIMEOUT "
      "and logs the collective, step and peer",
      RCOLL_CONFIG_DOUBLE, F(timeout), NULL, 1, .min = 0, .max = 1e6 },
    { "REVOKE_ON_TIMEOUT", "1", "A collective that times out revokes its communicator like one "
      "whose peer died: every member is told and every later collective on it fails at once "
      "(until rcoll_comm_shrink). 0: only a dead peer or a transport error revokes, so a rank "
      "that is merely late leaves the communicator usable",
      RCOLL_CONFIG_BOOL, F(revoke_on_timeout), NULL, 1 },
    { "EAGER_LIMIT", "16384", "Messages up to this many bytes are copied through pre-registered "
      "buffers (eager); larger ones use rendezvous (RDMA write into the receiver's buffer). "
      "Each rank pre-registers about (ranks x 8-32 + 128) buffers of this size for the verbs "
      "transport",
      RCOLL_CONFIG_SIZE, F(eager_limit), NULL, 0, .min = 0, .max = 1 << 20,
      .match = RCOLL_CONFIG_MATCH_VALUE },
    { "UNEXPECTED_MAX", "64m", "Most bytes of eager messages a rank keeps for receives not yet "
      "posted (unexpected), each counted as its length + 128; split evenly among its peers as "
      "each one's credit. A sender out of credit with a peer sends only a header and keeps the "
      "message until the receive is posted and asks for it (one more round trip, no copy), so "
      "neither side grows past it (docs/protocols.md)",
      RCOLL_CONFIG_SIZE, F(unexpected_max), NULL, 0, .min = 0, .max = 1099511627776.0,
      .match = RCOLL_CONFIG_MATCH_VALUE },
    { "SPIN_COUNT", "auto", "Idle progress polls before a waiting rank yields the CPU "
      "(sched_yield). auto: 1000, or 0 when this node's ranks outnumber its online CPUs "
      "(oversubscribed: a spinning rank would hold the core the rank it waits for needs); "
      "rcoll_info and RCOLL_LOG_LEVEL=info show the value chosen",
      RCOLL_CONFIG_UINT, F(spin_count), "auto", 1, .min = 0, .max = 1e9 },
    { "WAIT_SLEEP_MIN", "auto", "Bcast size in bytes (count x datatype size) from which a "
      "rank other than the root, in a blocking call that found nothing to do for "
      "RCOLL_SPIN_COUNT polls, sleeps 1 us at a time (nanosleep, with its thread's timer "
      "slack at 1 ns during the call, restored after) instead of yielding (sched_yield). A "
      "yielding rank stays runnable, and where ranks outnumber CPUs the scheduler can hand "
      "it its CPU back again and again while the rank it waits for, on the same CPU, waits "
      "its turn. Only the bcast's readers: they wait for a root that rarely waits itself, "
      "whereas where every rank sleeps the CPUs go idle, and waking an idle vCPU is slow. "
      "auto: 256 KiB while this node's ranks outnumber its online CPUs (8 ranks on 2 vCPUs: "
      "a 1 MiB bcast 54-177 instead of 104-394 us), else off; off: never (docs/shm.md, "
      "\"Waiting when ranks outnumber the CPUs\"); RCOLL_LOG_LEVEL=info says when auto turns it on",
      RCOLL_CONFIG_SIZE, F(wait_sleep_min), "auto|off", 1, .min = 0, .max = 1099511627776.0 },
    { "TRANSPORT", "auto", "Network transport: auto (UCX where it can reach the peer, raw verbs "
      "for iWARP devices or without UCX), ucx, verbs, or loop (in-memory: only ranks that are "
      "contexts in one process, for tests)",
      RCOLL_CONFIG_ENUM, F(transport), "auto|ucx|verbs|loop", 0 },
    { "SHM", "1", "Let the selector choose the shared-memory algorithms (shm) for communicators "
      "whose ranks share one node; forcing RCOLL_<COLL>_ALGORITHM=shm uses them regardless",
      RCOLL_CONFIG_BOOL, F(shm), NULL, 0, .match = RCOLL_CONFIG_MATCH_VALUE },
    { "SHM_CMA", "auto", "Single-copy shm bcast, allgather and reduce: peers read a buffer "
      "straight out of its owner's memory (process_vm_readv) instead of through the segment. "
      "auto: the sizes of the tune file's shm lines (rcoll_tune measures them; docs/tuning.md), "
      "else the sizes measured on the Xeon and AMD VMs (bcast from 64 KiB, allgather blocks from 24 KiB; "
      "reduce never); while the node's ranks outnumber its CPUs none fixed, only the bcast's path "
      "chosen at run time (RCOLL_SHM_ADAPT; off: none; docs/shm.md). on: at every "
      "size, off: never. Used only where the ranks of the "
      "communicator can read each other's memory (same user, ptrace rules: yama ptrace_scope 0, "
      "no seccomp filter against it), checked when its segment is set up; otherwise the two-copy "
      "path (one info line). Set with rcoll_config_set, it applies to the segments set up "
      "afterwards (a communicator's first shared-memory collective); the sizes are those of the "
      "communicator's rank 0",
      RCOLL_CONFIG_ENUM, F(shm_cma), "auto|on|off", 1, .match = RCOLL_CONFIG_MATCH_VALUE },
    { "SHM_ADAPT", "auto", "Run-time choices of the shm collectives from timed calls, per "
      "size class (the other way tried about one call in 64, by the allgather and the bcast "
      "in bursts of 8 consecutive collectives, one burst in 512 once 1.6x slower; a switch "
      "once it is 15% faster). The "
      "allgather (blocks from 8 KiB): single copy or two copies through the segment, chosen "
      "by rank 0 of the node and followed by every rank for the same call (docs/shm.md, "
      "\"Adaptive single copy\"), under RCOLL_SHM_CMA=auto where the ranks can read each "
      "other's memory, starting from the allgather's single-copy sizes (the defaults, or a "
      "tune file's shm cma_allgather line). The bcast (from 8 KiB): the same choice of "
      "path, made by rank 0 from the ranks' mean time in each call and starting from the "
      "bcast's single-copy sizes (docs/shm.md, \"The bcast's path, chosen at run time\"); "
      "the only path chosen while the node's ranks outnumber its CPUs, starting from two "
      "copies at every size. "
      "The flat allreduce (from 2 KiB): plain or "
      "streaming stores into the segment, chosen by rank 0 (docs/shm.md, \"Streaming copy-in, "
      "chosen at run time\"). The small bcast (from 2 KiB): each root's plain or streaming "
      "stores into its slot, from its own copy time plus its leaves' (docs/shm.md, \"The "
      "small bcast root's stores\"). The two-copy allgather (blocks from 2 KiB): plain "
      "or streaming stores into the segment (slot or pipeline), chosen by rank 0 (docs/shm.md, "
      "\"The allgather's stores into the segment\"). The reduce (from 16 KiB): single copy or two "
      "copies, chosen by rank 0 from its time as the root and starting from the reduce's "
      "single-copy sizes (docs/shm.md, \"The reduce's path, chosen at run time\"); from 8 KiB, "
      "plain or streaming stores into the segment (slot pieces or pipeline), chosen by rank 0 (docs/shm.md, \"The "
      "reduce's stores into the segment\"); the reduce_scatter (inputs from 8 KiB) likewise, and from 32 KiB inputs up to the slot size its path, the slots or the pipeline, chosen by rank 0 (docs/shm.md, \"The reduce_scatter's path, chosen at run time\"). A single-copy reduce's root (RCOLL_SHM_CMA=on too): how much of the vector it reduces itself, balanced per size class from whether it waited for the others (docs/shm.md, \"The single-copy reduce's split\"). The store choices not while the node's ranks "
      "outnumber its CPUs: there a bcast root's copy into the segment and the flat allreduce's copy-in "
      "stream from 2 KiB, a fixed rule (docs/shm.md, \"Waiting when ranks outnumber the CPUs\"). auto: all ten; off: the allgather's, the bcast's and the reduce's sizes fixed, the reduce_scatter on the slots up to their size "
      "(RCOLL_SHM_CMA=on fixes them too), plain stores, even single-copy reduce slices; random: a test setting, the choices "
      "made at random. Rank 0's value counts for the allgather's path and stores, the "
      "bcast's, the reduce's and the reduce_scatter's paths, the allreduce, the reduce and the reduce_scatter (a rank with off still keeps plain "
      "stores), each root's for its single-copy reduce slices; set with rcoll_config_set, it applies to the segments set up afterwards",
      RCOLL_CONFIG_ENUM, F(shm_adapt), "auto|off|random", 1 },
    { "SHM_STREAM_MIN", "auto", "Receive-buffer size in bytes from which the shm collectives "
      "copy into it with non-temporal (streaming) stores, which write whole lines to memory "
      "instead of reading each one first: faster once the buffer no longer fits the core's "
      "cache, slower before, and where exactly depends on the CPU's caches. auto: the tune "
      "file's shm stream_min line (rcoll_tune measures it; docs/tuning.md), else half this "
      "core's L2 cache (rcoll_info --config shows the value and where it came from); off: never. "
      "May differ between ranks. Set with rcoll_config_set, it applies to the segments set up "
      "afterwards",
      RCOLL_CONFIG_SIZE, F(shm_stream_min), "auto|off", 1, .min = 0, .max = 1099511627776.0 },
    { "SHM_PAIR_FLAT_MAX", "auto", "Largest shm allreduce in bytes, on a node's segment of 2 "
      "ranks, that takes the flat path (each rank reduces the whole vector out of the other's "
      "slot, fewest hand-overs); larger ones take the pipeline (each rank reduces half, "
      "half the bytes between cores). At most the slot size (256 KiB); 0: always the pipeline. "
      "auto: the tune file's shm pair_flat_max line (rcoll_tune measures it; docs/tuning.md), "
      "else 4096. Rank 0's value at the segment's set-up applies to every rank. Set with "
      "rcoll_config_set, it applies to the segments set up afterwards",
      RCOLL_CONFIG_SIZE, F(shm_pair_flat_max), "auto", 1, .min = 0, .max = 1099511627776.0 },
    { "FAULT", "", "Test and diagnostic setting, never for production: <world rank>:<point>[:<n>] "
      "makes that rank kill itself (SIGKILL) at point fence (init's address exchange), shm-setup "
      "(the world communicator's shared-memory segment set up), pipeline (a large shm allreduce "
      "after its n-th chunk, default 2), rndv (its n-th rendezvous send under way: its RTS sent "
      "(UCX) or its put issued (verbs), default 1), "
      "finalize (before rcoll_finalize's barrier) or shrink (rcoll_comm_shrink, as it takes its "
      "n-th agreement message, before acting on it, default 1: a member's first is the "
      "coordinator's decision, so it dies unacknowledged; the coordinator takes one proposal "
      "per member, then their acknowledgements); empty: none. The rank must be in the job, n 1 to 1000000 "
      "(docs/reliability.md, Fault matrix; Revoke and shrink)",
      RCOLL_CONFIG_STRING, F(fault), NULL, 0 },
    { "LIVENESS", "all", "Diagnostic: how dead ranks are learnt. all (the launcher's events, "
      "this node's processes and the transports) or transport (only the transports' errors and "
      "probes, as for ranks the launcher and the node cannot tell about; for tests)",
      RCOLL_CONFIG_ENUM, F(liveness), "all|transport", 0 },
    { "PROBE_S", "2", "A wait that has made no progress for this many seconds (RCOLL_TIMEOUT "
      "> 0) probes the other members of its communicator through the transport, again every "
      "as many seconds, so that a dead peer the transport alone would not report (a receiver "
      "on Soft-RoCE) errors: verbs writes a credit slot again (the RDMA WRITE changes nothing); "
      "UCX creates the endpoint of a member it has none to (endpoints are made on first use), so that its wire-up and keepalive report a dead one. 0 never probes. Runs from the deadline check, never on the "
      "per-collective path",
      RCOLL_CONFIG_DOUBLE, F(probe_s), NULL, 1, .min = 0, .max = 1e6 },
    { NULL }
};

static const rcoll_config_entry_t coll_table[] = {
    { "ALLREDUCE_ALGORITHM", "", "Force an allreduce algorithm (rcoll_info lists them); empty: "
      "the selector chooses", RCOLL_CONFIG_STRING, F(allreduce_alg), NULL, 1,
      .match = RCOLL_CONFIG_MATCH_VALUE },
    { "BCAST_ALGORITHM", "", "Force a broadcast algorithm; empty: the selector chooses",
      RCOLL_CONFIG_STRING, F(bcast_alg), NULL, 1, .match = RCOLL_CONFIG_MATCH_VALUE },
    { "BARRIER_ALGORITHM", "", "Force a barrier algorithm; empty: the selector chooses",
      RCOLL_CONFIG_STRING, F(barrier_alg), NULL, 1, .match = RCOLL_CONFIG_MATCH_VALUE },
    { "REDUCE_ALGORITHM", "", "Force a reduce algorithm; empty: the selector chooses",
      RCOLL_CONFIG_STRING, F(reduce_alg), NULL, 1, .match = RCOLL_CONFIG_MATCH_VALUE },
    { "ALLGATHER_ALGORITHM", "", "Force an allgather algorithm; empty: the selector chooses",
      RCOLL_CONFIG_STRING, F(allgather_alg), NULL, 1, .match = RCOLL_CONFIG_MATCH_VALUE },
    { "REDUCE_SCATTER_ALGORITHM", "", "Force a reduce-scatter algorithm; empty: the selector "
      "chooses", RCOLL_CONFIG_STRING, F(reduce_scatter_alg), NULL, 1,
      .match = RCOLL_CONFIG_MATCH_VALUE },
    { "TUNE_FILE", "", "Tune file (rules size range -> algorithm, measured model figures, shm single-copy sizes), as "
      "rcoll_tune writes it; empty: $sysconfdir/rcoll/tune if that exists; none: no file; see "
      "docs/tuning.md", RCOLL_CONFIG_STRING, F(tune_file), NULL, 0,
      .match = RCOLL_CONFIG_MATCH_FILE },
    { "SEGMENT_SIZE", "65536", "Pipelining unit in bytes for segmented algorithms (ring, chain)",
      RCOLL_CONFIG_SIZE, F(segment_size), NULL, 1, .min = 1024, .max = 1 << 30,
      .match = RCOLL_CONFIG_MATCH_VALUE },
    { NULL }
};

static const rcoll_config_entry_t verbs_table[] = {
    { "NET_DEVICES", "", "RDMA devices and ports to use, dev:port[,dev:port...] (e.g. mlx5_0:1); "
      "empty: the active device nearest to the process", RCOLL_CONFIG_STRING, F(net_devices), NULL, 0 },
    { "IB_GID_INDEX", "-1", "RoCE GID index to use; -1: prefer RoCE v2 IPv4-mapped, then v2 "
      "global IPv6, then v1", RCOLL_CONFIG_INT, F(ib_gid_index), NULL, 0, .min = -1, .max = 255 },
    { "VERBS_CM", "auto", "Connection set-up for raw verbs: auto or rdmacm (rdma_cm on every device "
      "kind, connections on first use), or oob (IB/RoCE without IP addresses: QPs for every peer at "
      "start-up)", RCOLL_CONFIG_ENUM, F(verbs_cm), "auto|rdmacm|oob", 0 },
    { "VERBS_CQ_PEERS", "64", "Connections per verbs completion queue: a process makes another "
      "queue each time that many connections have been made, so its CQ memory grows with the "
      "peers it talks to, not with the job size", RCOLL_CONFIG_INT, F(verbs_cq_peers), NULL, 0,
      .min = 1, .max = 1 << 20 },
    { "VERBS_SRQ", "auto", "Eager receive buffers of raw verbs: on = one shared receive queue "
      "(SRQ) per process, a fixed pool whatever the peers; off = each connected peer's own "
      "buffers (memory grows with the peers); auto = on where the device has SRQs and is "
      "InfiniBand or RoCE, off on iWARP (no RNR retry there: a SEND finding no buffer ends the "
      "connection), where on is refused", RCOLL_CONFIG_ENUM, F(verbs_srq), "auto|on|off", 0 },
    { "VERBS_SRQ_SIZE", "1024", "Receive buffers in the verbs shared receive queue (each of "
      "about RCOLL_EAGER_LIMIT bytes), clamped to the device's max_srq_wr; peers that find it "
      "empty retry (RNR) until buffers are re-posted", RCOLL_CONFIG_INT, F(verbs_srq_size), NULL,
      0, .min = 2, .max = 1 << 20 },
    { "UCX_LAZY_EPS", "auto", "UCX endpoints: on = made on first use (a send, read or probe "
      "to the peer), so memory and start-up grow with the peers a rank talks to; off = one to "
      "every rank, made in rcoll_init; auto = on above 256 ranks. UCX 1.13 can abort a rank "
      "that makes its first endpoint to a peer already dead (docs/scaling.md)",
      RCOLL_CONFIG_ENUM, F(ucx_lazy_eps), "auto|on|off", 0 },
    { "RCACHE", "1", "Cache memory registrations of user buffers",
      RCOLL_CONFIG_BOOL, F(rcache), NULL, 0 },
    { "RCACHE_MAX", "1g", "Most bytes the registration cache keeps registered",
      RCOLL_CONFIG_SIZE, F(rcache_max), NULL, 0, .min = 0, .max = 1099511627776.0 },
    { NULL }
};

/* Read by the MPI drop-in layer (mpi/, docs/mpi.md) itself, listed here so
 * that rcoll_info shows them and they are not taken for typos. */
static const rcoll_config_entry_t mpi_table[] = {
    { "MPI", "1", "MPI drop-in layer (librcoll_mpi_*.so in LD_PRELOAD): 0 passes every MPI "
      "call to MPI without unsetting LD_PRELOAD", RCOLL_CONFIG_BOOL, F(mpi), NULL, 0 },
    { "MPI_REPORT", "0", "MPI drop-in layer: at MPI_Finalize rank 0 prints, per MPI function "
      "called, how many calls rcoll ran and how many passed to MPI and why",
      RCOLL_CONFIG_BOOL, F(mpi_report), NULL, 0 },
    { NULL }
};

const rcoll_config_entry_t *const rcoll_config_tables[] = {
    core_table, coll_table, verbs_table, mpi_table, NULL
};
