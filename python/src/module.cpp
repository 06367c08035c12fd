// The Python module spmd_torch: importing it registers the torch.distributed backend "spmd",
// so that dist.init_process_group("spmd") and dist.new_group(...) build ProcessGroupSpmd.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.hpp"
#include "spmd/version.hpp"

namespace py = pybind11;
using spmd::torch_dist::ProcessGroupSpmd;

PYBIND11_MODULE(spmd_torch, m) {
  m.doc() =
      "spmd's collectives as the torch.distributed backend \"spmd\" (CPU tensors).\n\n"
      "    import spmd_torch  # registers the backend\n"
      "    torch.distributed.init_process_group(\"spmd\", init_method=\"env://\")\n";
  m.attr("__version__") = SPMD_VERSION;
  // The base class must be known to pybind11 before ProcessGroupSpmd derives from it.
  py::module_ dist = py::module_::import("torch.distributed");
  py::class_<ProcessGroupSpmd, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupSpmd>>(m, "ProcessGroupSpmd",
                                                                                        R"(
A c10d ProcessGroup whose operations run spmd's algorithms. torch.distributed makes one per
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
  // Before the interpreter finalizes: settle what is pending, run callbacks, end our threads.
  py::module_::import("atexit").attr("register")(py::cpp_function(&spmd::torch_dist::stop_all_group_threads));
  py::object backend = dist.attr("Backend");
  if (!py::hasattr(backend, "SPMD"))
    backend.attr("register_backend")("spmd", m.attr("_create_process_group"));
}
