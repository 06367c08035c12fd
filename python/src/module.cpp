// spmd_torch._C, the extension of the package spmd_torch: the backend's class and creator.
// spmd_torch/__init__.py registers the creator as torch.distributed's backend "spmd" (with the
// devices it serves on torch 2.x), so that dist.init_process_group("spmd") and
// dist.new_group(...) build ProcessGroupSpmd.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <vector>

#include "group/launcherless_store.hpp"
#include "noop_backend.hpp"
#include "process_group.hpp"
#include "spmd/topology.hpp"
#include "spmd/version.hpp"

namespace py = pybind11;
using spmd::torch_dist::ProcessGroupSpmd;

PYBIND11_MODULE(_C, m) {
  m.doc() =
      "spmd's collectives as the torch.distributed backend \"spmd\" (CPU tensors).\n\n"
      "    import spmd_torch  # registers the backend\n"
      "    torch.distributed.init_process_group(\"spmd\", init_method=\"env://\")\n";
  m.attr("__version__") = SPMD_VERSION;
  // The base class must be known to pybind11 before ProcessGroupSpmd derives from it.
  py::module_ dist = py::module_::import("torch.distributed");
  py::class_<ProcessGroupSpmd, spmd::torch_dist::BackendBase, c10::intrusive_ptr<ProcessGroupSpmd>>(m, "ProcessGroupSpmd",
                                                                                        R"(
A c10d ProcessGroup (torch 1.13) or Backend (torch 2.x) whose operations run spmd's algorithms. torch.distributed makes one per
group through the backend "spmd"; it can also be built directly over a store, like
torch.distributed.ProcessGroupGloo: ProcessGroupSpmd(store, rank, size, timeout).)")
      .def(py::init(&ProcessGroupSpmd::create), py::arg("store"), py::arg("rank"), py::arg("size"),
           py::arg("timeout") = std::chrono::milliseconds(kProcessGroupDefaultTimeout),
           py::call_guard<py::gil_scoped_release>());
  m.attr("BACKEND_NAME") = "spmd";
  // torch.distributed calls the creator for the world and for every new_group, with the
  // group's prefixed store; creating blocks until every member arrived, without the GIL.
  // torch.distributed's creator signature for plugins (1.13): (store, rank, size, timeout).
  m.def("_create_process_group", &ProcessGroupSpmd::create, py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
        py::call_guard<py::gil_scoped_release>());
  // For init_method="spmd://" (spmd_torch/__init__.py): the job as spmd's C++ init reads it
  // from spmdrun's, torchrun's, Open MPI's, Slurm's or PMI's variables, and where its ranks
  // meet when no MASTER_ADDR/MASTER_PORT is given. Bad variables raise, naming them.
  m.def("_launch_env", [] {
    const spmd::Topology t = spmd::Topology::from_env();
    py::dict d;
    d["rank"] = t.rank;
    d["world_size"] = t.world_size;
    d["local_rank"] = t.local_rank;
    d["local_world_size"] = t.local_world_size;
    d["node_rank"] = t.node_rank;
    d["nnodes"] = t.nnodes;
    d["master_addr"] = t.master_addr;
    d["master_port"] = t.master_port;
    d["source"] = spmd::launch_source_name(t.source);
    auto path = spmd::launcherless_store_path(t);
    d["file_store"] = path ? py::cast(*path) : py::none();
    return d;
  });
  // For bench/torch/overhead.py: the floor (a backend that does nothing, registered the same
  // way) and the same all_reduce issued from C++ on the group's spmd group.
  py::class_<spmd::torch_dist::NoopBackend, spmd::torch_dist::BackendBase,
             c10::intrusive_ptr<spmd::torch_dist::NoopBackend>>(m, "_NoopBackend");
  m.def("_create_noop_backend", &spmd::torch_dist::NoopBackend::create, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"));
  m.def(
      "_cpp_all_reduce_seconds",
      [](ProcessGroupSpmd& pg, size_t nbytes, int iters) {
        std::vector<float> buffer(std::max<size_t>(1, nbytes / sizeof(float)), 0.0f);
        pg.group().all_reduce(buffer);  // warm-up
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) pg.group().all_reduce(buffer);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
      },
      py::arg("group"), py::arg("nbytes"), py::arg("iters"), py::call_guard<py::gil_scoped_release>());
  // Before the interpreter finalizes: settle what is pending, run callbacks, end our threads.
  py::module_::import("atexit").attr("register")(py::cpp_function(&spmd::torch_dist::stop_all_group_threads));
}
