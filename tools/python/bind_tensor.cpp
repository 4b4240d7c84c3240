// NumPy arrays in and out of ir::Tensor without copies where the layout
// allows: a C-contiguous, 16-byte-aligned input array is read in place by
// the executors (they only read inputs, runtime/cpu_executor.cpp), and an
// output array owns the tensor's storage through a capsule.
#include <cstring>
#include <memory>

#include "tools/python/bindings.hpp"

namespace saturn::python {

namespace {

// The NumPy dtype a tensor dtype is exchanged as, or none (bf16, the
// minifloats and the packed integers are converted).
std::optional<py::dtype> numpy_dtype(ir::DType t) {
  using ir::DType;
  switch (t) {
    case DType::F32:
      return py::dtype::of<float>();
    case DType::F64:
      return py::dtype::of<double>();
    case DType::F16:
      return py::dtype("float16");
    case DType::I64:
      return py::dtype::of<std::int64_t>();
    case DType::I32:
      return py::dtype::of<std::int32_t>();
    case DType::I16:
      return py::dtype::of<std::int16_t>();
    case DType::I8:
      return py::dtype::of<std::int8_t>();
    case DType::U8:
      return py::dtype::of<std::uint8_t>();
    case DType::U16:
      return py::dtype::of<std::uint16_t>();
    case DType::U32:
      return py::dtype::of<std::uint32_t>();
    case DType::U64:
      return py::dtype::of<std::uint64_t>();
    case DType::Bool:
      return py::dtype::of<bool>();
    default:
      return std::nullopt;
  }
}

// The tensor dtype of a NumPy dtype, or none.
std::optional<ir::DType> tensor_dtype(const py::dtype& d) {
  using ir::DType;
  for (DType t : ir::kAllDTypes)
    if (auto n = numpy_dtype(t); n && (n->is(d) || n->equal(d))) return t;
  return std::nullopt;
}

// The dtype values of `t` travel as through NumPy: minifloats widen to
// float32, packed integers to a byte.
ir::DType exchanged_as(ir::DType t) {
  if (numpy_dtype(t)) return t;
  if (ir::is_float(t)) return ir::DType::F32;
  return ir::is_unsigned(t) ? ir::DType::U8 : ir::DType::I8;
}

}  // namespace

std::string numpy_dtype_name(ir::DType t) {
  if (auto d = numpy_dtype(t)) return py::str(*d).cast<std::string>();
  return ir::dtype_name(t);
}

ir::Tensor tensor_from_array(py::handle value, const std::string& what, std::optional<ir::DType> want) {
  py::module_ np = py::module_::import("numpy");
  py::array arr;
  if (py::isinstance<py::array>(value)) {
    arr = py::reinterpret_borrow<py::array>(value);
  } else {
    // A list or a scalar: read as the declared dtype when there is one.
    std::optional<py::dtype> as = want ? numpy_dtype(exchanged_as(*want)) : std::nullopt;
    arr = as ? np.attr("asarray")(value, *as) : np.attr("asarray")(value);
  }
  auto have = tensor_dtype(arr.dtype());
  if (!have)
    throw py::type_error(what + ": NumPy dtype " + py::str(arr.dtype()).cast<std::string>() +
                         " has no Saturn tensor type");
  if (want && *have != exchanged_as(*want))
    throw py::type_error(what + ": expected an array of " + numpy_dtype_name(exchanged_as(*want)) + ", got " +
                         numpy_dtype_name(*have) + " (convert it with .astype)");
  std::vector<std::int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
  const bool in_place = (arr.flags() & py::array::c_style) && reinterpret_cast<std::uintptr_t>(arr.data()) % 16 == 0;
  if (!in_place) arr = np.attr("ascontiguousarray")(arr);
  if (want && *want != *have) {
    // A minifloat or packed input arrives widened: narrowed element by element.
    ir::Tensor t(*want, dims);
    ir::Tensor wide = tensor_from_array(arr, what, *have);
    for (std::size_t i = 0; i < t.numel(); ++i)
      ir::is_float(*want) ? t.set(i, wide.at(i)) : t.set_int(i, wide.at_int(i));
    return t;
  }
  if (!in_place && reinterpret_cast<std::uintptr_t>(arr.data()) % 16 != 0) {
    ir::Tensor t = ir::Tensor::uninitialized(*have, dims);
    std::memcpy(t.bytes(), arr.data(), t.nbytes());
    return t;
  }
  // The array stays alive while the tensor (or a copy of it) does; the
  // deleter may run on a thread that does not hold the GIL.
  auto keep = std::make_shared<py::object>(arr);
  std::shared_ptr<std::uint8_t[]> data(static_cast<std::uint8_t*>(const_cast<void*>(arr.data())),
                                       [keep](std::uint8_t*) mutable {
                                         py::gil_scoped_acquire gil;
                                         keep.reset();
                                       });
  return ir::Tensor::borrowed(*have, std::move(dims), std::move(data));
}

py::array array_from_tensor(ir::Tensor t) {
  const ir::DType as = exchanged_as(t.dtype());
  if (as != t.dtype()) {
    ir::Tensor wide(as, t.dims());
    for (std::size_t i = 0; i < t.numel(); ++i) ir::is_float(as) ? wide.set(i, t.at(i)) : wide.set_int(i, t.at_int(i));
    t = std::move(wide);
  }
  if (!t.sole_owner()) {
    // Shared (a weight returned as an output, an input passed through):
    // the array gets its own copy, so writing to it changes nothing else.
    ir::Tensor own = ir::Tensor::uninitialized(t.dtype(), t.dims());
    if (t.nbytes()) std::memcpy(own.bytes(), t.bytes(), t.nbytes());
    t = std::move(own);
  }
  std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
  const std::size_t esize = ir::dtype_size(t.dtype());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(esize);
  for (std::size_t k = shape.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= std::max<py::ssize_t>(shape[k], 1);
  }
  auto owner = std::make_unique<std::shared_ptr<std::uint8_t[]>>(t.storage());
  void* data = owner->get();
  py::capsule base(owner.get(), [](void* p) { delete static_cast<std::shared_ptr<std::uint8_t[]>*>(p); });
  owner.release();  // the capsule owns it now
  return py::array(*numpy_dtype(t.dtype()), shape, strides, data, base);
}

py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

void bind_tensors(py::module_& m) {
  // Round trip through the border, for tests and for users who want to see
  // which arrays are read in place.
  m.def(
      "_roundtrip",
      [](py::handle a) {
        ir::Tensor t = tensor_from_array(a, "array");
        const bool borrowed = !t.sole_owner();
        return py::make_tuple(array_from_tensor(std::move(t)), borrowed);
      },
      py::arg("array"));
}

}  // namespace saturn::python
