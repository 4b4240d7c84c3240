// The extension module saturn._core. The package's __init__.py (beside it)
// adds the verbs' Python signatures and the PyTorch bridge.
#include "tools/python/bindings.hpp"

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  using namespace saturn::python;
  m.doc() = "Saturn's C++ core: graphs, optimization, compiled programs, the e-graph engine.";
  static py::exception<SaturnError> error(m, "SaturnError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SaturnError& e) {
      PyErr_SetString(error.ptr(), e.message.c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of memory (lower node_limit)");
    }
  });
  // A rule merged classes of different types: what `saturn opt` exits 1 on.
  static py::exception<SaturnError> unsound(m, "UnsoundRuleError", error.ptr());
  m.attr("__version__") = "0.1.0";
  bind_tensors(m);
  bind_graphs(m);
  bind_engine(m);
}
