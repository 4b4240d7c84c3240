#include "ir/tensor.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "ir/minifloat.hpp"
#include "ir/shape.hpp"

namespace saturn::ir {

std::size_t Tensor::element_count(const std::vector<std::int64_t>& dims) {
  for (auto d : dims)
    if (d < 0) throw std::invalid_argument("negative dimension");
  // Callers check shapes first (checked_numel); a wrapped count here would
  // allocate too little and be written past.
  const auto count = checked_numel(dims);
  if (!count) throw std::length_error("a tensor of more than 2^48 elements");
  return static_cast<std::size_t>(*count);
}

Tensor::Tensor(DType t, std::vector<std::int64_t> dims) : Tensor(t, std::move(dims), /*zero_fill=*/true) {}

Tensor Tensor::uninitialized(DType t, std::vector<std::int64_t> dims) {
  return Tensor(t, std::move(dims), /*zero_fill=*/false);
}

Tensor::Tensor(DType t, std::vector<std::int64_t> dims, bool zero_fill) : dtype_(t), dims_(std::move(dims)) {
  numel_ = element_count(dims_);
  nbytes_ = numel_ * dtype_size(t);
  // From new[] (malloc's 16-byte alignment, which kernels reading f64 or
  // i64 rely on), not make_shared's block behind the counts.
  data_ =
      zero_fill ? std::make_unique<std::uint8_t[]>(nbytes_) : std::make_unique_for_overwrite<std::uint8_t[]>(nbytes_);
}

Tensor Tensor::borrowed(DType t, std::vector<std::int64_t> dims, std::shared_ptr<std::uint8_t[]> data) {
  Tensor r;
  r.dtype_ = t;
  r.dims_ = std::move(dims);
  r.numel_ = element_count(r.dims_);
  r.nbytes_ = r.numel_ * dtype_size(t);
  r.data_ = std::move(data);
  r.borrowed_ = true;
  return r;
}

void Tensor::unshare() {
  auto own = std::make_unique_for_overwrite<std::uint8_t[]>(nbytes_);
  std::memcpy(own.get(), data_.get(), nbytes_);
  data_ = std::move(own);
  borrowed_ = false;
}

namespace {
// Truncation toward zero; NaN becomes 0 and values outside int64's range
// saturate (C++ conversion would be UB), as LLVM's fptosi.sat and PTX's
// cvt.rzi do.
std::int64_t saturating_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 0x1p63) return INT64_MAX;
  if (v < -0x1p63) return INT64_MIN;
  return static_cast<std::int64_t>(v);
}

template <class T>
T load(const std::uint8_t* p, std::size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void store(std::uint8_t* p, std::size_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}
}  // namespace

double Tensor::at(std::size_t i) const {
  const std::uint8_t* p = data_.get();
  switch (dtype_) {
    case DType::F32:
      return load<float>(p, i);
    case DType::F16:
      return half_to_float(load<std::uint16_t>(p, i));
    case DType::BF16:
      return bf16_to_float(load<std::uint16_t>(p, i));
    case DType::F64:
      return load<double>(p, i);
    case DType::U64:
      return static_cast<double>(load<std::uint64_t>(p, i));
    default:
      if (is_minifloat(dtype_)) return minifloat_value(dtype_, p[i]);
      return static_cast<double>(at_int(i));
  }
}

std::int64_t Tensor::at_int(std::size_t i) const {
  const std::uint8_t* p = data_.get();
  switch (dtype_) {
    case DType::I64:
      return load<std::int64_t>(p, i);
    case DType::I32:
      return load<std::int32_t>(p, i);
    case DType::I16:
      return load<std::int16_t>(p, i);
    case DType::U16:
      return load<std::uint16_t>(p, i);
    case DType::U32:
      return load<std::uint32_t>(p, i);
    case DType::U64:  // its bits: a value past INT64_MAX reads negative
      return std::bit_cast<std::int64_t>(load<std::uint64_t>(p, i));
    case DType::I8:
    case DType::I4:
    case DType::I2:
      return load<std::int8_t>(p, i);
    case DType::U8:
    case DType::U4:
    case DType::U2:
      return load<std::uint8_t>(p, i);
    case DType::Bool:
      return load<std::uint8_t>(p, i) != 0;
    default:
      return saturating_int(at(i));
  }
}

void Tensor::set(std::size_t i, double v) {
  std::uint8_t* p = bytes();
  switch (dtype_) {
    case DType::F32:
      store<float>(p, i, static_cast<float>(v));
      return;
    case DType::F16:
      store<std::uint16_t>(p, i, float_to_half(static_cast<float>(v)));
      return;
    case DType::BF16:
      store<std::uint16_t>(p, i, float_to_bf16(static_cast<float>(v)));
      return;
    case DType::F64:
      store<double>(p, i, v);
      return;
    case DType::Bool:
      store<std::uint8_t>(p, i, v != 0);
      return;
    case DType::U64:  // the values past int64's range too
      if (v >= 0x1p63 && v < 0x1p64) {
        store<std::uint64_t>(p, i, static_cast<std::uint64_t>(v));
        return;
      }
      set_int(i, saturating_int(v));
      return;
    default:
      if (is_minifloat(dtype_)) {
        p[i] = minifloat_code(dtype_, v);
        return;
      }
      set_int(i, saturating_int(v));
      return;
  }
}

void Tensor::set_unsaturated(std::size_t i, double v) {
  if (is_minifloat(dtype_))
    bytes()[i] = minifloat_code(dtype_, v, /*saturate=*/false);
  else
    set(i, v);
}

void Tensor::set_int(std::size_t i, std::int64_t v) {
  std::uint8_t* p = bytes();
  switch (dtype_) {
    case DType::I64:
      store<std::int64_t>(p, i, v);
      return;
    case DType::I32:
      store<std::int32_t>(p, i, static_cast<std::int32_t>(v));
      return;
    case DType::I8:
      store<std::int8_t>(p, i, static_cast<std::int8_t>(v));
      return;
    case DType::U8:
      store<std::uint8_t>(p, i, static_cast<std::uint8_t>(v));
      return;
    case DType::I16:
      store<std::int16_t>(p, i, static_cast<std::int16_t>(v));
      return;
    case DType::U16:
      store<std::uint16_t>(p, i, static_cast<std::uint16_t>(v));
      return;
    case DType::U32:
      store<std::uint32_t>(p, i, static_cast<std::uint32_t>(v));
      return;
    case DType::U64:
      store<std::uint64_t>(p, i, static_cast<std::uint64_t>(v));
      return;
    case DType::I4:  // the low nibble, sign-extended
      store<std::int8_t>(p, i, static_cast<std::int8_t>(((v & 0xF) ^ 8) - 8));
      return;
    case DType::U4:
      store<std::uint8_t>(p, i, static_cast<std::uint8_t>(v & 0xF));
      return;
    case DType::I2:
      store<std::int8_t>(p, i, static_cast<std::int8_t>(((v & 3) ^ 2) - 2));
      return;
    case DType::U2:
      store<std::uint8_t>(p, i, static_cast<std::uint8_t>(v & 3));
      return;
    case DType::Bool:
      store<std::uint8_t>(p, i, v != 0);
      return;
    default:
      set(i, static_cast<double>(v));
      return;
  }
}

std::vector<std::int64_t> Tensor::strides() const { return row_major_strides(dims_); }

std::vector<std::int64_t> Tensor::to_ints() const {
  std::vector<std::int64_t> out(numel_);
  for (std::size_t i = 0; i < numel_; ++i) out[i] = at_int(i);
  return out;
}

Tensor Tensor::reshaped(std::vector<std::int64_t> dims) const {
  Tensor t = *this;
  std::size_t n = 1;
  for (auto d : dims) n *= static_cast<std::size_t>(d);
  if (n != numel_) throw std::invalid_argument("reshape changes the element count");
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::scalar(DType t, double v) {
  Tensor x(t, {});
  x.set(0, v);
  return x;
}

Tensor Tensor::of_ints(DType t, std::vector<std::int64_t> dims, const std::vector<std::int64_t>& values) {
  Tensor x(t, std::move(dims));
  for (std::size_t i = 0; i < x.numel(); ++i) x.set_int(i, values[i]);
  return x;
}

Tensor Tensor::of_doubles(DType t, std::vector<std::int64_t> dims, const std::vector<double>& values) {
  Tensor x(t, std::move(dims));
  for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, values[i]);
  return x;
}

std::string Tensor::summary() const {
  std::string s = dtype_name(dtype_);
  s += '[';
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(dims_[i]);
  }
  return s + ']';
}

namespace {

// The innermost dimension with the element size known, so that the copy of
// a weight's transpose is a loop of loads and stores.
template <typename Element>
void copy_row(const std::uint8_t* src, std::int64_t stride, std::int64_t n, std::uint8_t* dst) {
  for (std::int64_t i = 0; i < n; ++i) {
    Element e;
    std::memcpy(&e, src + i * stride * static_cast<std::int64_t>(sizeof(Element)), sizeof(Element));
    std::memcpy(dst + i * static_cast<std::int64_t>(sizeof(Element)), &e, sizeof(Element));
  }
}

// n elements of esize bytes, `stride` elements apart in src, to dst; the
// sizes without a fast path byte for byte.
void copy_any_row(std::size_t esize, const std::uint8_t* src, std::int64_t stride, std::int64_t n, std::uint8_t* dst) {
  switch (esize) {
    case 1:
      return copy_row<std::uint8_t>(src, stride, n, dst);
    case 2:
      return copy_row<std::uint16_t>(src, stride, n, dst);
    case 4:
      return copy_row<std::uint32_t>(src, stride, n, dst);
    case 8:
      return copy_row<std::uint64_t>(src, stride, n, dst);
    default: {
      const auto es = static_cast<std::int64_t>(esize);
      for (std::int64_t i = 0; i < n; ++i) std::memcpy(dst + i * es, src + i * stride * es, esize);
    }
  }
}

// A transpose's rows read one element per cache line (the innermost result
// dimension walks the source with a large stride), so row by row a copy
// misses the cache at every element: VGG-11's 25088x4096 classifier weight
// transposed took 1.2 s of `saturn opt`. In square tiles over that
// dimension and the one the source is contiguous along, each tile's lines
// are read once. Returns false where the view has no such dimension.
bool copy_transposed(const std::uint8_t* base, std::size_t esize, const std::vector<std::int64_t>& dims,
                     const std::vector<std::int64_t>& strides, std::int64_t offset, std::uint8_t* dst) {
  constexpr std::int64_t kTile = 64;
  const std::size_t r = dims.size();
  if (r < 2) return false;
  const std::int64_t inner = dims[r - 1], step = strides[r - 1];
  if (inner < kTile || step == 1 || step == -1 || step == 0) return false;
  std::size_t j = r;
  for (std::size_t d = 0; d + 1 < r; ++d)
    if ((strides[d] == 1 || strides[d] == -1) && dims[d] >= kTile) j = d;
  if (j == r) return false;
  std::vector<std::int64_t> out_strides(r, 1);
  for (std::size_t d = r - 1; d-- > 0;) out_strides[d] = out_strides[d + 1] * dims[d + 1];
  const auto es = static_cast<std::int64_t>(esize);
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t out_offset = 0;
  for (;;) {
    for (std::int64_t a = 0; a < dims[j]; a += kTile)
      for (std::int64_t b = 0; b < inner; b += kTile) {
        const std::uint8_t* s = base + (offset + a * strides[j] + b * step) * es;
        std::uint8_t* t = dst + (out_offset + a * out_strides[j] + b) * es;
        const std::int64_t na = std::min(kTile, dims[j] - a), nb = std::min(kTile, inner - b);
        for (std::int64_t i = 0; i < na; ++i)  // row i of the tile: contiguous in the result
          copy_any_row(esize, s + i * strides[j] * es, step, nb, t + i * out_strides[j] * es);
      }
    // The next plane: an odometer over every dimension but j and the innermost.
    std::size_t d = r - 1;
    for (; d-- > 0;) {
      if (d == j) continue;
      offset += strides[d];
      out_offset += out_strides[d];
      if (++idx[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      out_offset -= out_strides[d] * dims[d];
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return true;
  }
}

}  // namespace

void copy_strided(const std::uint8_t* base, std::size_t esize, const std::vector<std::int64_t>& dims,
                  const std::vector<std::int64_t>& strides, std::int64_t offset, std::uint8_t* dst) {
  for (auto d : dims)
    if (d == 0) return;
  if (copy_transposed(base, esize, dims, strides, offset, dst)) return;
  const std::size_t r = dims.size();
  const std::int64_t inner = r ? dims[r - 1] : 1;
  const std::int64_t step = r ? strides[r - 1] : 0;
  const std::int64_t rows = r ? checked_numel(dims).value_or(0) / inner : 1;
  std::vector<std::int64_t> idx(r, 0);
  const auto es = static_cast<std::int64_t>(esize);
  for (std::int64_t row = 0; row < rows; ++row) {
    copy_any_row(esize, base + offset * es, step, inner, dst);
    dst += inner * es;
    // The next row: an odometer over every dimension but the innermost.
    for (std::size_t d = r > 0 ? r - 1 : 0; d-- > 0;) {
      offset += strides[d];
      if (++idx[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace saturn::ir
