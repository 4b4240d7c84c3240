// The pieces of the Python module saturn._core (docs/python.md), one file
// per concept: arrays (bind_tensor), graphs, optimization and compiled
// programs (bind_graph), the e-graph engine, rules and proofs (bind_engine).
//
// Invariant at this border: no C++ exception but SaturnError (and the
// TypeError / ValueError of a wrong argument) reaches Python, and every
// Expected's error becomes a SaturnError carrying its Diagnostic's text,
// the same words (file:line:col, node, rule) the command line prints.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "ir/diagnostic.hpp"
#include "ir/tensor.hpp"
#include "nlohmann/json.hpp"

namespace saturn::python {

namespace py = pybind11;

// saturn.SaturnError: bad input (what the command line exits 2 on).
struct SaturnError {
  std::string message;
};

template <class T>
T unwrap(Expected<T> e) {
  if (!e) throw SaturnError{e.error().to_string()};
  return std::move(*e);
}

// A NumPy array (or anything np.asarray accepts) as a tensor. A C-contiguous,
// aligned array of a supported dtype is borrowed, not copied (it stays
// alive while the tensor does); `want`, when given, is the dtype the
// graph declares: an array of another dtype is a TypeError naming `what`.
ir::Tensor tensor_from_array(py::handle value, const std::string& what, std::optional<ir::DType> want = {});
// A tensor as a NumPy array that owns the tensor's storage (no copy) when
// nothing else shares it; bf16 and 8-bit floats come back as float32,
// 4- and 2-bit integers as int8 / uint8 (NumPy has none of these).
py::array array_from_tensor(ir::Tensor t);
// The NumPy name of a dtype ("float32"), or Saturn's ("bf16") where NumPy has none.
std::string numpy_dtype_name(ir::DType t);

// JSON as Python objects (dicts, lists, numbers), through the json module.
py::object to_python(const nlohmann::json& j);

void bind_tensors(py::module_& m);
void bind_graphs(py::module_& m);
void bind_engine(py::module_& m);

}  // namespace saturn::python
