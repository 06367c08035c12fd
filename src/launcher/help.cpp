// spmdrun --help: every flag, its torchrun spelling and PET_* variable, and what workers get.
// scripts/spmdrun-docs.sh makes the man page and the bash completion from this text, so its
// layout is a format: "Name:" at column 0 starts a section; "  TERM  text" (two spaces before
// the text, or TERM alone on its line when it is long) is an entry, continued on lines indented
// 28 columns; an option's TERM is "-x, --flag VALUE", where a VALUE "a|b|N" lists the values to
// complete (lowercase alternatives) and FILE, DIR, CMD say what to complete; "[=a|b]" is an
// optional value. Other lines indented two columns are prose, with single spaces only.
#include "launcher/options.hpp"

namespace spmd::launcher {

std::string help_text() {
  return R"(usage: spmdrun [flags] PROGRAM [ARGS...]

Starts PROGRAM as the processes of one SPMD job on this node (torchrun's contract: the same
flags and the same worker variables, natively). Every flag also has torchrun's underscore
spelling (--nproc_per_node) and takes its default from PET_<NAME> (PET_NPROC_PER_NODE=4).
A PROGRAM ending in .py runs under Python (SPMD_PYTHON, else PYTHON_EXEC, else the python3
beside spmdrun — a venv's, after pip install — else python3 from PATH, with -u); anything
else is executed directly.

Nodes and processes:
  --nnodes N|MIN:MAX        nodes in the job (default 1); a range needs --rdzv-backend c10d
                            and is elastic: a node arriving later is let in at a new round
                            (the workers restart with the new WORLD_SIZE), a lost node is left
                            behind at the next restart while MIN remain
  --nproc-per-node N|gpu|auto|cpu
                            processes on this node (default 1). gpu: one per CUDA device this
                            node sees (counted through the driver, libcuda.so.1, which honours
                            CUDA_VISIBLE_DEVICES; an error without one); auto: gpu when there
                            are GPUs, else one per CPU core; cpu: one per CPU core. Each node
                            counts its own; nodes may run different counts: ranks are
                            numbered node by node
  --gpus-per-proc K         give each process its own K GPUs: local rank i gets the node's
                            GPUs [i*K, (i+1)*K) as CUDA_VISIBLE_DEVICES (slices of spmdrun's
                            own CUDA_VISIBLE_DEVICES when set, else of 0..count-1) and
                            SPMD_GPUS_PER_PROC=K; processes x K must fit the node's GPUs.
                            With gpu/auto: count / K processes
  --node-rank R             this node's rank, 0..nnodes-1 (static rendezvous; default 0)

Rendezvous:
  --standalone              one node, nothing to set up: free ports are picked (default for a
                            single node anyway); MASTER_ADDR is the host's name, like torchrun
  --master-addr HOST        node 0's address (default 127.0.0.1)
  --master-port PORT        where node 0's spmdrun hosts the launcher store (static rendezvous;
                            required with --nnodes > 1). PyTorch workers use it too
                            (MASTER_ADDR/PORT, TORCHELASTIC_USE_AGENT_STORE=True)
  --rdzv-backend static|c10d|etcd
                            static (default): fixed nodes and node ranks; c10d: nodes join at
                            --rdzv-endpoint and get node ranks in join order; etcd: as c10d,
                            with the rendezvous kept in an etcd cluster (survives any node)
  --rdzv-endpoint HOST:PORT[,HOST:PORT...]
                            c10d: the meeting point; the first node to bind it hosts the store.
                            etcd: the cluster's client endpoints (port 2379 by default)
  --local-addr ADDR         the address the other nodes reach this node at (its workers listen
                            there; MASTER_ADDR when it is node 0); default: learned from the
                            rendezvous connections, not from the host name
  --rdzv-id ID              the job's id (TORCHELASTIC_RUN_ID; default "none"); nodes of one
                            c10d or etcd job must give the same id
  --rdzv-conf K=V,...       join_timeout=SECONDS (default 600), last_call_timeout=SECONDS
                            (default 1: how long to wait for more nodes once MIN have joined),
                            peer_timeout=SECONDS (default 30: a node whose spmdrun sends no
                            heartbeat for this long fails the job)

Workers:
  --max-restarts K          restart the whole job (every node) up to K times after a failure
                            (TORCHELASTIC_RESTART_COUNT counts them; default 0); nodes joining
                            an elastic job do not count
  --monitor-interval S      longest sleep between checks of the workers (default 5); exits
                            are seen at once (SIGCHLD), so this rarely matters
  --grace-period S          after SIGTERM, how long workers have before SIGKILL (default 5)
  --role NAME               ROLE_NAME for the workers (default "default"; also the output
                            prefix: --role rank gives "[rank0]:")
  --no-python               execute PROGRAM directly, even if it ends in .py
  -m, --module              run PROGRAM as a Python module (python3 -u -m PROGRAM)
  --run-path                run PROGRAM (a .py path) with runpy.run_path in the worker's Python
  --start-method spawn|fork|forkserver
                            accepted for torchrun compatibility (workers are always fork+exec)

Output:
  -r, --redirects 0|1|2|3|R:V,..
                            send worker streams to log files only: 0 none, 1 stdout,
                            2 stderr, 3 both; or per local rank, e.g. 0:3,1:2
  -t, --tee 0|1|2|3|R:V,..  same values: write log files AND show on the console
  --log-dir DIR             log files go to DIR/<rdzv id>/attempt_<n>/<local rank>/{stdout,
                            stderr}.log (default with -r/-t: a new directory under $TMPDIR)
  --local-ranks-filter R,..
                            show only these local ranks' output on the console (log files
                            keep everything)
  Each console line of a worker is prefixed "[<global rank>]:" when the job has more than one
  process; TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (with $role_name, $rank, $local_rank) changes
  it, e.g. '[${role_name}${local_rank}]:' for torchrun 1.13's format.

spmd extras:
  --hostfile FILE           head-node mode: start one spmdrun per host of FILE ("host",
                            "host slots=N" or "host:N" per line; N defaults to
                            --nproc-per-node) through --rsh, static rendezvous hosted by the
                            first host (or --master-addr) on --master-port (default: a port
                            free on this machine). The remote spmdrun is this one's path
                            (SPMD_REMOTE_SPMDRUN overrides), run in the same directory
  --rsh CMD                 the remote shell for --hostfile (default ssh; e.g. "ssh -tt" so a
                            closed connection also stops the remote launcher)
  --hang-timeout DURATION   when no rank of a group has progressed for DURATION (seconds, or
                            90s, 2m, 1h) while some rank is inside a call, ask every rank for
                            its flight records, print a report naming the lagging ranks and
                            the call they did not enter, and stop the job (exit code 124).
                            Default: half of SPMD_TIMEOUT (300 s); 0 turns it off
  --trace FILE.json         record every rank's collectives (SPMD_TRACE) and merge them into
                            one Chrome trace, one row per rank (open in ui.perfetto.dev)
  --dry-run                 print the rank table (node rank, local rank, rank, world size)
                            these flags produce, and the worker command, then exit; with
                            --gpus-per-proc or gpu, each rank's GPUs too (nodes with the GPUs
                            the layout needs, numbered 0.., when this machine lacks them)
  -h, --help                this text
  --version                 spmdrun's version

torch.distributed.launch:
  --local-rank-arg[=local_rank|local-rank]
                            give each worker its local rank as an argument too, as the
                            deprecated torch.distributed.launch did: --local_rank=N (the
                            default, torch 1.x's) or --local-rank=N (torch 2.x's), right after
                            PROGRAM, before ARGS; for scripts that read it with argparse
  --use-env                 torch.distributed.launch's flag for no such argument (LOCAL_RANK
                            only): spmdrun's default, accepted for commands moved over

Environment:
  PET_<NAME>                the default of flag --<name> (PET_NPROC_PER_NODE=4); flags win
  SPMD_PYTHON, PYTHON_EXEC  the Python of .py programs (else the python3 beside spmdrun, else
                            python3 from PATH)
  SPMD_DEBUG                log level of spmdrun and of spmd in the workers: WARN (default),
                            INFO or TRACE (also DEBUG, DETAIL), any case; spmdrun refuses any
                            other value (exit 2)
  SPMD_TIMEOUT              spmd's operation timeout (default 600 s); --hang-timeout defaults
                            to half of it
  SPMD_REMOTE_SPMDRUN       the spmdrun --hostfile starts on each host (default: this one)
  CUDA_VISIBLE_DEVICES      the GPUs that gpu, auto and --gpus-per-proc count and split
  TORCHELASTIC_ERROR_FILE   set for spmdrun itself: where a failed job's root cause is written
                            (as torchrun does)
  OMP_NUM_THREADS           passed on when set; else 1 with more than one process per node

Workers get:
  RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE
  ROLE_RANK ROLE_NAME ROLE_WORLD_SIZE MASTER_ADDR MASTER_PORT TORCHELASTIC_RESTART_COUNT
  TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID TORCHELASTIC_USE_AGENT_STORE
  TORCHELASTIC_ERROR_FILE (where torch's @record writes an exception; the report shows it)
  NODE_RANK SPMD_STORE_ADDR SPMD_STORE_PORT SPMD_STORE_PREFIX; with --gpus-per-proc K,
  CUDA_VISIBLE_DEVICES (their own K GPUs) and SPMD_GPUS_PER_PROC=K; unless set,
  NCCL_ASYNC_ERROR_HANDLING=1 and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (torchrun 1.13's and
  2.x's), USE_LIBUV=0 (torch 2.x's TCPStores without libuv, which Debian 13's torch lacks),
  and OMP_NUM_THREADS=1 when more than one process runs per node.
  Workers of torch 1.13 use spmdrun's store as torch's (TORCHELASTIC_USE_AGENT_STORE=True).
  With torch 2.x (read from its version.py, without importing it) torch's rank 0 hosts its own
  store at MASTER_PORT instead, as a torch 2.x built without libuv needs (its client of an
  agent store asks for libuv); USE_LIBUV=1 says this torch has libuv and keeps spmdrun's.
  TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (torchrun 2.x's switch) gives rank 0's store always.

Failures:
  When a worker fails, the others are stopped (SIGTERM to every process of the job, SIGKILL
  after the grace period) and spmdrun prints which rank failed, where, how (exit code or
  signal) and the end of its stderr, then exits with that worker's exit code (128+N for
  signal N). SIGINT/SIGTERM/SIGHUP to spmdrun are forwarded to the workers. Processes the
  workers leave running are stopped when they end (and named); even kill -9 of spmdrun
  leaves none behind. A PROGRAM (or .py script) that is not there gets one line naming it
  before anything starts.

Exit status:
  0                         every worker on every node succeeded
  N                         the failed worker's exit code (128+N when signal N ended it)
  1                         spmdrun itself failed (a rendezvous timed out, a node was lost)
  2                         bad flags, or a bad SPMD_DEBUG
  124                       the job hung (--hang-timeout)
  126                       PROGRAM, its .py script or the Python was found but cannot run
                            (not executable, not readable, a folder)
  127                       PROGRAM, its .py script or the Python was not found
  128+N                     spmdrun itself got signal N

Examples:
  spmdrun --nproc-per-node 4 ./train
  spmdrun --standalone --nproc-per-node 4 train.py --epochs 3
  # two nodes, static: node 0 hosts the store at 10.0.0.1:29500
  spmdrun --nnodes 2 --node-rank 0 --nproc-per-node 8 --master-addr 10.0.0.1 --master-port 29500 ./train
  spmdrun --nnodes 2 --node-rank 1 --nproc-per-node 8 --master-addr 10.0.0.1 --master-port 29500 ./train
  # elastic-style: 2 to 4 nodes join at one endpoint
  spmdrun --nnodes 2:4 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint 10.0.0.1:29400 --rdzv-id job7 ./train
  spmdrun --dry-run --nnodes 3 --nproc-per-node 8
  # one process per GPU; or 2 nodes x 4 GPUs, 2 GPUs per process (ranks 0-3)
  spmdrun --nproc-per-node gpu train.py
  spmdrun --dry-run --nnodes 2 --nproc-per-node 2 --gpus-per-proc 2 ./train
  # from a head node: one spmdrun per host over ssh
  spmdrun --hostfile hosts.txt --nproc-per-node 8 ./train
  # a script of torch.distributed.launch's time, which reads --local_rank=N
  spmdrun --nproc-per-node 4 --local-rank-arg train.py
)";
}

}  // namespace spmd::launcher
