// Dense tensors: a dtype, static dimensions, row-major bytes.
//
// The reference interpreter and the ONNX importer use these; element access
// converts through double (floating types) or int64 (integer and bool types)
// so that one plain loop serves every dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.hpp"

namespace saturn::ir {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType t, std::vector<std::int64_t> dims);  // zero-filled

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::size_t rank() const { return dims_.size(); }
  std::size_t numel() const { return numel_; }
  std::size_t nbytes() const { return bytes_.size(); }
  const std::uint8_t* bytes() const { return bytes_.data(); }
  std::uint8_t* bytes() { return bytes_.data(); }

  // Element i (row-major) as a double / as an integer (a u64 as its bits).
  double at(std::size_t i) const;
  std::int64_t at_int(std::size_t i) const;
  // Stores v converted to the dtype (floats round, minifloats saturating;
  // integers truncate toward zero, NaN to 0, saturate at int64's range (a
  // u64 at its own), then keep their low bits as set_int does; bool is
  // v != 0).
  void set(std::size_t i, double v);
  void set_int(std::size_t i, std::int64_t v);
  // As set, except that a minifloat overflows to infinity or NaN instead of
  // saturating (Cast's `saturate = 0`).
  void set_unsaturated(std::size_t i, double v);

  std::vector<std::int64_t> strides() const;              // in elements
  std::vector<std::int64_t> to_ints() const;              // every element as an integer
  Tensor reshaped(std::vector<std::int64_t> dims) const;  // same data, new dims (numel must match)

  static Tensor scalar(DType t, double v);
  static Tensor of_ints(DType t, std::vector<std::int64_t> dims, const std::vector<std::int64_t>& values);
  static Tensor of_doubles(DType t, std::vector<std::int64_t> dims, const std::vector<double>& values);

  std::string summary() const;  // "f32[2 3]"

 private:
  DType dtype_ = DType::F32;
  std::vector<std::int64_t> dims_;
  std::size_t numel_ = 1;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace saturn::ir
