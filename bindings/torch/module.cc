// weft_torch._C: exposes ProcessGroupWeft to Python as a subclass of
// torch.distributed.ProcessGroup, so the creator registered with
// torch.distributed.Backend.register_backend can return it.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "bindings/torch/process_group_weft.h"

namespace py = pybind11;
using weft::torch_backend::ProcessGroupWeft;

PYBIND11_MODULE(_C, m) {
  m.doc() = "weft collectives as a torch.distributed backend";
  // torch registers its ProcessGroup type when torch.distributed loads.
  py::module::import("torch.distributed");
  py::class_<ProcessGroupWeft, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupWeft>>(m, "ProcessGroupWeft")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             return c10::make_intrusive<ProcessGroupWeft>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>());
}
