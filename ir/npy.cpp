#include "ir/npy.hpp"

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ir/onnx_import.hpp"
#include "ir/sexpr.hpp"

namespace saturn::ir {

namespace {
std::string field(const std::string& header, const std::string& key) {
  auto p = header.find("'" + key + "'");
  if (p == std::string::npos) return {};
  p = header.find(':', p);
  if (p == std::string::npos) return {};
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
    char q = header[p];
    auto e = header.find(q, p + 1);
    return e == std::string::npos ? std::string() : header.substr(p + 1, e - p - 1);
  }
  if (p < header.size() && header[p] == '(') {
    auto e = header.find(')', p);
    return e == std::string::npos ? std::string() : header.substr(p, e - p + 1);
  }
  auto e = header.find_first_of(",}", p);
  return header.substr(p, e == std::string::npos ? std::string::npos : e - p);
}
}  // namespace

Expected<Tensor> read_npy(const std::string& path) {
  auto fail = [&](const std::string& m) { return Diagnostic{SourceLoc{path, 0, 0}, m}; };
  auto bytes = read_file(path);
  if (!bytes) return bytes.error();
  const std::string data = std::move(*bytes);
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) return fail("not a .npy file (bad magic)");
  const auto major = static_cast<unsigned char>(data[6]);
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len =
        static_cast<unsigned char>(data[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(data[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return fail("truncated .npy header");
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(data[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return fail("unsupported .npy version " + std::to_string(major));
  }
  if (offset + header_len > data.size()) return fail("truncated .npy header");
  const std::string header = data.substr(offset, header_len);
  const std::string descr = field(header, "descr"), fortran = field(header, "fortran_order"),
                    shape = field(header, "shape");
  if (descr.empty() || shape.empty()) return fail("malformed .npy header");
  if (fortran.find("True") != std::string::npos) return fail("Fortran-ordered arrays are not supported");
  static const std::pair<const char*, DType> kinds[] = {{"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16},
                                                        {"<i8", DType::I64}, {"<i4", DType::I32}, {"<i2", DType::I16},
                                                        {"|i1", DType::I8},  {"<u8", DType::U64}, {"<u4", DType::U32},
                                                        {"<u2", DType::U16}, {"|u1", DType::U8},  {"|b1", DType::Bool}};
  std::optional<DType> dt;
  for (auto [d, t] : kinds)
    if (descr == d) dt = t;
  if (!dt)
    return fail("array type '" + descr + "' is not supported (little-endian f2/f4/f8, i1/i2/i4/i8, u1/u2/u4/u8, b1)");
  std::vector<std::int64_t> dims;
  std::size_t n = 1;
  for (std::size_t p = 1; p < shape.size();) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size() || shape[p] == ')') break;
    std::size_t q = p;
    while (q < shape.size() && std::isdigit(static_cast<unsigned char>(shape[q]))) ++q;
    if (q == p) return fail("malformed shape in .npy header");
    std::int64_t d = 0;
    if (std::from_chars(shape.data() + p, shape.data() + q, d).ec != std::errc()) return fail("array too large");
    if (d != 0 && n > (std::size_t{1} << 40) / static_cast<std::size_t>(d)) return fail("array too large");
    dims.push_back(d);
    n *= static_cast<std::size_t>(d);
    p = q;
  }
  const std::size_t body = offset + header_len;
  if (data.size() - body != n * dtype_size(*dt))
    return fail("holds " + std::to_string(data.size() - body) + " bytes of data, its shape needs " +
                std::to_string(n * dtype_size(*dt)));
  Tensor t = Tensor::uninitialized(*dt, dims);
  std::memcpy(t.bytes(), data.data() + body, t.nbytes());
  return t;
}

Expected<Tensor> read_tensor_file(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) return read_npy(path);
  return read_tensor_pb(path);
}

}  // namespace saturn::ir
