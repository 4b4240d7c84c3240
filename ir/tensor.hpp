// Dense tensors: a dtype, static dimensions, row-major bytes.
//
// The reference interpreter and the ONNX importer use these; element access
// converts through double (floating types) or int64 (integer and bool types)
// so that one plain loop serves every dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.hpp"

namespace saturn::ir {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType t, std::vector<std::int64_t> dims);  // zero-filled
  // For a tensor every byte of which is written next (a copy from a file,
  // a permutation): skips the zero fill.
  static Tensor uninitialized(DType t, std::vector<std::int64_t> dims);
  // A tensor over memory it does not own (a NumPy array's): `data` keeps
  // the owner alive and holds nbytes of row-major elements. It is read in
  // place; the first write through bytes() copies it, so the owner's memory
  // is never written.
  static Tensor borrowed(DType t, std::vector<std::int64_t> dims, std::shared_ptr<std::uint8_t[]> data);
  // The storage, shared (what a NumPy array made from this tensor keeps
  // alive); sole_owner() says whether nothing else reads or writes it.
  const std::shared_ptr<std::uint8_t[]>& storage() const { return data_; }
  bool sole_owner() const { return !borrowed_ && data_.use_count() == 1; }

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::size_t rank() const { return dims_.size(); }
  std::size_t numel() const { return numel_; }
  std::size_t nbytes() const { return nbytes_; }
  const std::uint8_t* bytes() const { return data_.get(); }
  // Writable bytes: a tensor shared with a copy gets its own first.
  std::uint8_t* bytes() {
    if (borrowed_ || data_.use_count() > 1) unshare();
    return data_.get();
  }

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
  Tensor(DType t, std::vector<std::int64_t> dims, bool zero_fill);
  void unshare();
  static std::size_t element_count(const std::vector<std::int64_t>& dims);  // throws on a negative or huge one

  DType dtype_ = DType::F32;
  std::vector<std::int64_t> dims_;
  std::size_t numel_ = 1;
  // Copies share the values until one is written (a model's weights pass
  // through the importer, the e-graph, the extracted graph and the exporter
  // without being copied).
  std::shared_ptr<std::uint8_t[]> data_;
  std::size_t nbytes_ = 0;
  bool borrowed_ = false;  // data_ is someone else's memory: copied before a write
};

// Copies the elements of a strided view into dst, in row-major order: the
// element at index (i0, i1, ...) is base's element offset + sum(ik *
// strides[k]) (strides in elements, 0 for a broadcast dimension).
void copy_strided(const std::uint8_t* base, std::size_t esize, const std::vector<std::int64_t>& dims,
                  const std::vector<std::int64_t>& strides, std::int64_t offset, std::uint8_t* dst);

}  // namespace saturn::ir
