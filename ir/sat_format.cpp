#include "ir/sat_format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "ir/sexpr.hpp"

namespace saturn::ir {

namespace {

std::string name_text(const std::string& n) {
  bool plain = !n.empty() && n.find_first_of(" \t\n()[]\";") == std::string::npos && n[0] != ':' && n[0] != '?';
  if (plain) return n;
  std::string s = "\"";
  for (char c : n) {
    if (c == '"' || c == '\\') s += '\\';
    s += c;
  }
  return s + "\"";
}

std::string real_text(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r =
      single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)) : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string values_text(const Tensor& t) {
  std::string s = "[";
  const bool single = t.dtype() == DType::F32 || t.dtype() == DType::F16 || t.dtype() == DType::BF16;
  for (std::size_t i = 0; i < t.numel(); ++i) {
    if (i) s += ' ';
    s += is_float(t.dtype()) ? real_text(t.at(i), single) : std::to_string(t.at_int(i));
  }
  return s + "]";
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? " " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string tensor_text(const Tensor& t) {
  return std::string("(tensor ") + dtype_name(t.dtype()) + " " + dims_text(t.dims()) + " " + values_text(t) + ")";
}

}  // namespace

std::string attr_text(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::int64_t>)
          return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>)
          return real_text(x, false);
        else if constexpr (std::is_same_v<T, std::string>) {
          std::string s = "\"";
          for (char c : x) {
            if (c == '"' || c == '\\') s += '\\';
            s += c;
          }
          return s + "\"";
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          return dims_text(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          std::string s = "(floats";
          for (double d : x) s += " " + real_text(d, false);
          return s + ")";
        } else {
          return tensor_text(x);
        }
      },
      v);
}

namespace {

// The graph's text; init_values gives each initializer's values form.
template <typename InitValues>
std::string graph_text(const Graph& g, InitValues init_values) {
  std::string o = "(graph " + name_text(g.name.empty() ? "main" : g.name) + "\n";
  for (const GraphValue& in : g.inputs) {
    o += "  (input " + name_text(in.name) + " " + dtype_name(in.type.dtype) + " [";
    for (std::size_t i = 0; i < in.type.shape.size(); ++i) o += (i ? " " : "") + in.type.shape[i].to_string();
    o += "])\n";
  }
  for (const auto& [name, t] : g.initializers) {
    o += "  (init " + name_text(name) + " " + dtype_name(t.dtype()) + " " + dims_text(t.dims()) + " ";
    o += init_values(t);
    o += ")\n";
  }
  for (const Node& n : g.nodes) {
    o += "  (node " + (n.name.empty() ? std::string("\"\"") : name_text(n.name)) + " " + n.op + " (";
    for (std::size_t i = 0; i < n.outputs.size(); ++i)
      o += (i ? " " : "") + (n.outputs[i].empty() ? std::string("\"\"") : name_text(n.outputs[i]));
    o += ") (";
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      o += (i ? " " : "") + (n.inputs[i].empty() ? std::string("\"\"") : name_text(n.inputs[i]));
    o += ")";
    for (const auto& [k, v] : n.attrs.all()) o += " :" + k + " " + attr_text(v);
    o += ")\n";
  }
  o += "  (output";
  for (const std::string& out : g.outputs) o += " " + name_text(out);
  return o + "))\n";
}

constexpr std::size_t kDataAlignment = 64;

}  // namespace

std::string write_sat(const Graph& g) {
  return graph_text(g, [](const Tensor& t) { return values_text(t); });
}

Expected<bool> write_sat_file(const Graph& g, const std::string& path, const SatFileOptions& options) {
  const std::string data_path = path + ".data";
  const std::string data_name = std::filesystem::path(data_path).filename().string();
  std::ofstream data;
  std::size_t offset = 0;
  bool data_failed = false;
  const std::string text = graph_text(g, [&](const Tensor& t) {
    if (t.nbytes() <= options.external_above) return values_text(t);
    if (!data.is_open()) data.open(data_path, std::ios::binary | std::ios::trunc);
    const std::size_t at = offset;
    const std::size_t end = at + t.nbytes();
    static const char zeros[kDataAlignment] = {};
    data.write(reinterpret_cast<const char*>(t.bytes()), static_cast<std::streamsize>(t.nbytes()));
    offset = (end + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
    data.write(zeros, static_cast<std::streamsize>(offset - end));
    data_failed |= !data;
    return "(data " + name_text(data_name) + " " + std::to_string(at) + ")";
  });
  std::error_code ec;
  if (data.is_open()) {
    data.close();
    data_failed |= data.fail();
  } else {
    std::filesystem::remove(data_path, ec);  // a data file of an earlier write would look like this one's
  }
  if (data_failed) return Diagnostic{SourceLoc{data_path, 0, 0}, "cannot write file"};
  std::ofstream f(path, std::ios::binary);
  if (!f.write(text.data(), static_cast<std::streamsize>(text.size())) || !f.flush())
    return Diagnostic{SourceLoc{path, 0, 0}, "cannot write file"};
  return true;
}

namespace {

std::string name_of(const SExpr& e, const char* what) {
  if (e.kind == SExpr::Kind::String) return e.text;
  if (e.is_atom() && !e.is_keyword()) return e.text;
  fail_at(e.loc, std::string("expected ") + what + ", found '" + e.to_string() + "'");
}

DType dtype_of(const SExpr& e) {
  auto t = e.is_atom() ? dtype_from_name(e.text) : std::nullopt;
  if (!t)
    fail_at(e.loc, "expected an element type (f32 f16 bf16 f64 i64 i32 i8 u8 bool), found '" + e.to_string() + "'");
  return *t;
}

double real_of(const SExpr& e) {
  if (e.is_atom("nan")) return NAN;
  if (e.is_atom("inf")) return INFINITY;
  if (e.is_atom("-inf")) return -INFINITY;
  auto n = e.number();
  if (!n) fail_at(e.loc, "expected a number, found '" + e.to_string() + "'");
  return std::holds_alternative<double>(*n) ? std::get<double>(*n) : static_cast<double>(std::get<std::int64_t>(*n));
}

std::int64_t int_of(const SExpr& e) {
  auto n = e.number();
  if (!n || !std::holds_alternative<std::int64_t>(*n))
    fail_at(e.loc, "expected an integer, found '" + e.to_string() + "'");
  return std::get<std::int64_t>(*n);
}

// An integer element of type t; a value t cannot hold is an error, not a
// wrapped one (i8 300 would store 44).
std::int64_t int_in_range(DType t, const SExpr& e) {
  const std::int64_t v = int_of(e);
  const auto [lo, hi] = [t]() -> std::pair<std::int64_t, std::int64_t> {
    const int bits = t == DType::Bool ? 1 : integer_bits(t);
    if (t == DType::Bool || (is_unsigned(t) && bits < 64)) return {0, (std::int64_t{1} << bits) - 1};
    if (t == DType::U64) return {0, std::numeric_limits<std::int64_t>::max()};  // what .sat integers reach
    if (bits < 64) return {-(std::int64_t{1} << (bits - 1)), (std::int64_t{1} << (bits - 1)) - 1};
    return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  }();
  if (v < lo || v > hi)
    fail_at(e.loc, std::to_string(v) + " is out of range for " + dtype_name(t) + " [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "]");
  return v;
}

std::vector<std::int64_t> ints_of(const SExpr& e) {
  if (e.kind != SExpr::Kind::Bracket)
    fail_at(e.loc, "expected a list of integers [...], found '" + e.to_string() + "'");
  std::vector<std::int64_t> v;
  for (const SExpr& x : e.items) v.push_back(int_of(x));
  return v;
}

// "N", "2*M", "-N+3", "M-1": c*SYM + k.
Dim dim_of(const SExpr& e) {
  if (auto n = e.number()) {
    if (!std::holds_alternative<std::int64_t>(*n) || std::get<std::int64_t>(*n) < 0)
      fail_at(e.loc, "expected a dimension, found '" + e.to_string() + "'");
    return Dim::of(std::get<std::int64_t>(*n));
  }
  if (!e.is_atom()) fail_at(e.loc, "expected a dimension, found '" + e.to_string() + "'");
  const std::string& t = e.text;
  const auto bad = [&]() { fail_at(e.loc, "expected a dimension (a number, or c*SYMBOL+k), found '" + t + "'"); };
  // An integer spelling all of t[from, to), with its sign.
  const auto integer = [&](std::size_t from, std::size_t to) {
    std::int64_t v = 0;
    const char* b = t.data() + from;
    const char* e2 = t.data() + to;
    if (*b == '+') ++b;
    auto r = std::from_chars(b, e2, v);
    if (b == e2 || r.ec != std::errc() || r.ptr != e2) bad();
    return v;
  };
  std::int64_t c = 1, k = 0;
  std::size_t pos = 0;
  if (auto star = t.find('*'); star != std::string::npos) {
    c = integer(0, star);
    pos = star + 1;
  } else if (!t.empty() && t[0] == '-') {
    c = -1;
    pos = 1;
  }
  std::size_t end = t.find_first_of("+-", pos);
  std::string sym = t.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (end != std::string::npos) k = integer(end, t.size());
  if (sym.empty() || !(std::isalpha(static_cast<unsigned char>(sym[0])) || sym[0] == '_') ||
      !std::all_of(sym.begin(), sym.end(),
                   [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }))
    bad();
  return Dim::symbol(sym, c, k);
}

// (data FILE OFFSET): the tensor's bytes in FILE (relative to the .sat's
// folder) from OFFSET.
Tensor tensor_from_data(DType t, std::vector<std::int64_t> dims, const SExpr& values, const std::string& sat_path) {
  if (values.items.size() != 3) fail_at(values.loc, "expected (data FILE OFFSET)");
  const std::string file = name_of(values.items[1], "a data file name");
  const std::int64_t offset = int_of(values.items[2]);
  if (offset < 0) fail_at(values.items[2].loc, "negative offset");
  const auto where = std::filesystem::path(sat_path).parent_path() / file;
  Tensor out = Tensor::uninitialized(t, std::move(dims));
  std::error_code ec;
  const auto size = std::filesystem::file_size(where, ec);
  if (ec) fail_at(values.items[1].loc, "cannot open the data file '" + where.string() + "'");
  if (static_cast<std::uintmax_t>(offset) > size || size - static_cast<std::uintmax_t>(offset) < out.nbytes())
    fail_at(values.loc, "the data file '" + where.string() + "' holds " + std::to_string(size) +
                            " bytes; the tensor needs " + std::to_string(out.nbytes()) + " from offset " +
                            std::to_string(offset));
  std::ifstream in(where, std::ios::binary);
  in.seekg(offset);
  if (!in || !in.read(reinterpret_cast<char*>(out.bytes()), static_cast<std::streamsize>(out.nbytes())))
    fail_at(values.items[1].loc, "cannot read the data file '" + where.string() + "'");
  return out;
}

Tensor tensor_of(DType t, const SExpr& dims, const SExpr& values, const std::string& sat_path = "") {
  auto d = ints_of(dims);
  for (auto x : d)
    if (x < 0) fail_at(dims.loc, "negative dimension");
  const auto count = checked_numel(d);
  if (!count) fail_at(dims.loc, "shape " + dims.to_string() + " has more than 2^48 elements");
  if (values.is_list() && !values.items.empty() && values.items[0].is_atom("data"))
    return tensor_from_data(t, std::move(d), values, sat_path);
  if (values.kind != SExpr::Kind::Bracket) fail_at(values.loc, "expected the values [...] or (data FILE OFFSET)");
  const auto n = static_cast<std::size_t>(*count);
  if (values.items.size() != n)
    fail_at(values.loc, "expected " + std::to_string(n) + " values for shape " + dims.to_string() + ", found " +
                            std::to_string(values.items.size()));
  Tensor out(t, d);
  for (std::size_t i = 0; i < n; ++i) {
    if (is_float(t))
      out.set(i, real_of(values.items[i]));
    else
      out.set_int(i, int_in_range(t, values.items[i]));
  }
  return out;
}

AttrValue attr_of(const SExpr& e) {
  if (e.kind == SExpr::Kind::String) return e.text;
  if (e.kind == SExpr::Kind::Bracket) return ints_of(e);
  if (e.is_list() && !e.items.empty() && e.items[0].is_atom("floats")) {
    std::vector<double> v;
    for (std::size_t i = 1; i < e.items.size(); ++i) v.push_back(real_of(e.items[i]));
    return v;
  }
  if (e.is_list() && e.items.size() == 4 && e.items[0].is_atom("tensor"))
    return tensor_of(dtype_of(e.items[1]), e.items[2], e.items[3]);
  if (auto n = e.number()) {
    if (std::holds_alternative<std::int64_t>(*n)) return std::get<std::int64_t>(*n);
    return std::get<double>(*n);
  }
  if (e.is_atom("nan") || e.is_atom("inf") || e.is_atom("-inf")) return real_of(e);
  fail_at(e.loc, "expected an attribute value, found '" + e.to_string() + "'");
}

Graph graph_of(const SExpr& top, const std::string& path) {
  if (!top.is_list() || top.items.empty() || !top.items[0].is_atom("graph"))
    fail_at(top.loc, "expected (graph NAME ...)");
  if (top.items.size() < 2) fail_at(top.loc, "expected the graph's name after 'graph'");
  Graph g;
  g.source = path;
  g.name = name_of(top.items[1], "the graph's name");
  bool has_output = false;
  std::set<std::string> declared;  // inputs and initializers: each name once
  const auto declare = [&](const SExpr& name, const char* what) {
    std::string n = name_of(name, what);
    if (!declared.insert(n).second) fail_at(name.loc, "'" + n + "' is declared twice (as an input or initializer)");
    return n;
  };
  for (std::size_t i = 2; i < top.items.size(); ++i) {
    const SExpr& f = top.items[i];
    if (!f.is_list() || f.items.empty() || !f.items[0].is_atom())
      fail_at(f.loc, "expected (input ...), (init ...), (node ...) or (output ...)");
    const std::string& head = f.items[0].text;
    if (head == "input") {
      if (f.items.size() != 4 || f.items[3].kind != SExpr::Kind::Bracket)
        fail_at(f.loc, "expected (input NAME TYPE [DIMS])");
      Shape s;
      for (const SExpr& d : f.items[3].items) s.push_back(dim_of(d));
      g.inputs.push_back(GraphValue{declare(f.items[1], "an input name"), ValueType{dtype_of(f.items[2]), s}});
      g.declared_inputs.push_back(g.inputs.back().name);
    } else if (head == "init") {
      if (f.items.size() != 5) fail_at(f.loc, "expected (init NAME TYPE [DIMS] [VALUES])");
      g.initializers[declare(f.items[1], "a name")] = tensor_of(dtype_of(f.items[2]), f.items[3], f.items[4], path);
    } else if (head == "node") {
      if (f.items.size() < 5 || !f.items[3].is_list() || !f.items[4].is_list())
        fail_at(f.loc, "expected (node NAME OP (OUTPUTS) (INPUTS) :ATTR VALUE ...)");
      Node n;
      n.name = name_of(f.items[1], "a node name");
      if (!f.items[2].is_atom()) fail_at(f.items[2].loc, "expected an op name");
      n.op = f.items[2].text;
      const OpDef* def = OpRegistry::get().find(n.op);
      if (!def) fail_at(f.items[2].loc, "unknown op '" + n.op + "'");
      for (const SExpr& o : f.items[3].items) n.outputs.push_back(name_of(o, "an output name"));
      for (const SExpr& in : f.items[4].items) n.inputs.push_back(name_of(in, "an operand name"));
      for (std::size_t k = 5; k < f.items.size(); k += 2) {
        if (!f.items[k].is_keyword())
          fail_at(f.items[k].loc, "expected :ATTRIBUTE, found '" + f.items[k].to_string() + "'");
        if (k + 1 >= f.items.size()) fail_at(f.items[k].loc, "expected a value after " + f.items[k].text);
        // A misspelled attribute would silently leave the default in force.
        const std::string attr = f.items[k].text.substr(1);
        if (std::none_of(def->attrs.begin(), def->attrs.end(), [&](const AttrSpec& s) { return s.name == attr; })) {
          std::string known;
          for (const AttrSpec& s : def->attrs) known += (known.empty() ? "" : ", ") + s.name;
          fail_at(f.items[k].loc, "op '" + n.op + "' has no attribute '" + attr + "'" +
                                      (known.empty() ? std::string(" (it takes none)") : " (it takes " + known + ")"));
        }
        n.attrs.set(attr, attr_of(f.items[k + 1]));
      }
      g.nodes.push_back(std::move(n));
    } else if (head == "output") {
      for (std::size_t k = 1; k < f.items.size(); ++k) g.outputs.push_back(name_of(f.items[k], "an output name"));
      has_output = true;
    } else {
      fail_at(f.items[0].loc, "expected input, init, node or output, found '" + head + "'");
    }
  }
  if (!has_output) fail_at(top.loc, "the graph has no (output ...)");
  return g;
}

}  // namespace

Expected<Graph> read_sat(std::string_view text, const std::string& path) {
  auto forms = parse_sexprs(text, path);
  if (!forms) return forms.error();
  if (forms->size() != 1)
    return Diagnostic{
        SourceLoc{path, forms->empty() ? 1 : (*forms)[1].loc.line, forms->empty() ? 1 : (*forms)[1].loc.col},
        forms->empty() ? "expected (graph ...)" : "expected one (graph ...) form, found more"};
  try {
    Graph g = graph_of((*forms)[0], path);
    // The ops' own rules check the graph, naming the node.
    auto types = infer_types(g);
    if (!types) return types.error();
    return g;
  } catch (const DiagnosticError& e) {
    return e.diag;
  } catch (const std::exception& e) {
    return stray_exception(SourceLoc{path, 0, 0}, e, "the graph");
  }
}

Expected<Graph> read_sat_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return read_sat(*text, path);
}

}  // namespace saturn::ir
