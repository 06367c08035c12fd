// MPI singletons joined through an ompi-server (mpi_singletons.hpp).
#include "backends/mpi/mpi_singletons.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/error_text.hpp"
#include "common/fd.hpp"
#include "common/log.hpp"

namespace spmd::mpi {

namespace {

const char* kServerKey = "spmd/mpi/ompi-server/host";
const char* kUriKey = "spmd/mpi/ompi-server/uri";

// The ompi-server this process started: stopped and reaped at exit (and killed by the kernel
// if this process dies first: PR_SET_PDEATHSIG). Its stderr stays open to us until then, so
// what it prints later never meets a closed pipe.
pid_t g_server = -1;
Fd* g_server_stderr = nullptr;
void stop_server() {
  if (g_server <= 0) return;
  ::kill(g_server, SIGTERM);
  retry_eintr([] { return ::waitpid(g_server, nullptr, 0); });
  g_server = -1;
  delete g_server_stderr;
  g_server_stderr = nullptr;
}

std::string what_of(const BackendConfig& c) { return "group " + c.prefix + " (mpi backend)"; }

// Starts `ompi-server --no-daemonize -r +` and returns the address it prints on stderr (its
// stdout is block-buffered into a pipe: the address would come only at its exit).
std::string start_server(const BackendConfig& c) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) raise_errno(what_of(c) + ": pipe for ompi-server");
  Fd read_end(fds[0]), write_end(fds[1]);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) raise_errno(what_of(c) + ": fork for ompi-server");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(write_end.get(), STDERR_FILENO);
    const char* argv[] = {"ompi-server", "--no-daemonize", "-r", "+", nullptr};
    ::execvp(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  g_server = pid;
  std::atexit(stop_server);
  write_end.reset();
  // The address is one line; read until it ends, the server exits, or the deadline passes.
  Deadline deadline(c.timeout);
  std::string out;
  for (;;) {
    if (out.find('\n') != std::string::npos) break;
    pollfd p{read_end.get(), POLLIN, 0};
    int n = retry_eintr([&] { return ::poll(&p, 1, deadline.poll_ms()); });
    if (n == 0)
      raise(ErrorKind::Timeout, what_of(c) + ": ompi-server printed no address within " + seconds_text(c.timeout) + " s");
    char buf[512];
    ssize_t got = retry_eintr([&] { return ::read(read_end.get(), buf, sizeof buf); });
    if (got <= 0)
      raise(ErrorKind::InvalidArgument,
            what_of(c) + ": ompi-server (Open MPI's name server, package openmpi-bin) did not start; processes that "
                         "mpirun did not launch need it to connect to each other. Start the program with mpirun, or "
                         "install openmpi-bin");
    out.append(buf, static_cast<size_t>(got));
  }
  out.resize(out.find('\n'));
  g_server_stderr = new Fd(std::move(read_end));
  if (out.find("tcp://") == std::string::npos)
    raise(ErrorKind::System, what_of(c) + ": ompi-server did not print its address but: " + out);
  return out;
}

void check(Api& api, int rc, const BackendConfig& c, const char* step) {
  if (rc == 0) return;
  raise(api.error_kind(rc), what_of(c) + ": " + step + " failed: " + api.error_text(rc) +
                                " (MPI singletons connect through the job's ompi-server; start the program with mpirun "
                                "if this keeps failing)");
}

}  // namespace

void prepare_singleton(const BackendConfig& c) {
  Store& store = *c.store;
  const std::string me = std::to_string(c.globals[static_cast<size_t>(c.rank)]);
  std::string uri;
  if (to_string(store.compare_set(kServerKey, {}, to_bytes(me))) == me) {
    uri = start_server(c);
    store.set(kUriKey, uri);
    SPMD_LOG(Info) << "mpi backend: started ompi-server (pid " << g_server << ") at " << uri;
  } else {
    uri = to_string(store.get(kUriKey, c.timeout));
  }
  ::setenv("OMPI_MCA_pmix_server_uri", uri.c_str(), 1);
}

Comm connect_singletons(Api& api, const BackendConfig& c, InFlight& inflight) {
  const int n = static_cast<int>(c.globals.size()), me = c.rank;
  Comm comm = nullptr;
  if (n == 1) {
    check(api, api.comm_self(&comm), c, "MPI_Comm_dup(MPI_COMM_SELF)");
    return comm;
  }
  Store& store = *c.store;
  const std::string port_key = c.prefix + "/mpi/port", joined = c.prefix + "/mpi/joined/";
  inflight.begin_step("connecting the group's MPI singletons (MPI_Comm_connect/accept)", Deadline(c.timeout));
  std::string port;
  if (me == 0) {
    check(api, api.open_port(&port), c, "MPI_Open_port");
    store.set(port_key, port);
    check(api, api.comm_self(&comm), c, "MPI_Comm_dup(MPI_COMM_SELF)");
  } else {
    port = to_string(store.get(port_key, c.timeout));
    // One at a time, in rank order: rank k connects once rank k-1 joined.
    if (me > 1) store.wait({joined + std::to_string(me - 1)}, c.timeout);
    check(api, api.connect(port, &comm), c, "MPI_Comm_connect");
  }
  for (int next = me + 1; next < n; ++next) {
    Comm merged = nullptr;
    int rc = api.accept(port, comm, &merged);
    if (rc != 0) api.comm_free(comm);
    check(api, rc, c, "MPI_Comm_accept");
    api.comm_free(comm);
    comm = merged;
    if (me == 0) store.set(joined + std::to_string(next), "1");
  }
  if (me == 0) api.close_port(port);
  inflight.end();
  return comm;
}

}  // namespace spmd::mpi
