#include "egraph/op.hpp"

#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

namespace saturn::egraph {

std::string format_number(const Number& n) {
  if (n.is_int()) return std::to_string(n.as_int());
  double d = n.as_real();
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

namespace {

struct Entry {
  OpKind kind;
  std::string text;             // symbol name, or the canonical text of the literal
  std::vector<Number> numbers;  // one for Int/Real, the elements for List
};

// Keys are "<kind>:<text>"; the text of a literal is canonical, so equal
// literals intern to one Op (2.0 and 2 stay distinct: different kinds).
//
// Every e-node added asks its op's kind (is it a literal?) and every
// attribute read asks a literal's number, so entries are read without the
// lock: an entry never changes once added, a deque never moves its elements,
// and each id's entry is found through chunks that never move either,
// written before `size_` publishes the id. A shared lock on every read took
// 12% of `saturn verify` (the lock's counter is written by every reader).
class OpTable {
 public:
  static OpTable& get() {
    static OpTable table;
    return table;
  }

  Op intern(OpKind kind, std::string text, std::vector<Number> numbers) {
    std::string key;
    key.reserve(text.size() + 2);
    key += static_cast<char>('0' + static_cast<int>(kind));
    key += ':';
    key += text;
    {
      std::shared_lock lock(mu_);
      if (auto it = index_.find(key); it != index_.end()) return Op{it->second};
    }
    std::unique_lock lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) return Op{it->second};
    auto id = static_cast<std::uint32_t>(entries_.size());
    entries_.push_back(Entry{kind, std::move(text), std::move(numbers)});
    index_.emplace(std::move(key), id);
    std::atomic<const Entry**>& chunk = chunks_[id >> kChunkBits];
    if (!chunk.load(std::memory_order_relaxed)) {
      owned_.push_back(std::make_unique_for_overwrite<const Entry*[]>(kChunkSize));
      chunk.store(owned_.back().get(), std::memory_order_relaxed);
    }
    chunk.load(std::memory_order_relaxed)[id & (kChunkSize - 1)] = &entries_.back();
    size_.store(id + 1, std::memory_order_release);
    return Op{id};
  }

  template <class F>
  auto with(Op op, F&& f) const {
    // (An id the caller holds was published before it got it.)
    if (op.id >= size_.load(std::memory_order_acquire)) throw std::out_of_range("Op: an id never interned");
    return f(*chunks_[op.id >> kChunkBits].load(std::memory_order_relaxed)[op.id & (kChunkSize - 1)]);
  }

 private:
  // A million ids a chunk (its pages touched as ids reach them), 4096 chunks.
  static constexpr unsigned kChunkBits = 20;
  static constexpr std::size_t kChunkSize = std::size_t{1} << kChunkBits;
  static constexpr std::size_t kChunks = (std::size_t{1} << 32) >> kChunkBits;

  mutable std::shared_mutex mu_;
  std::deque<Entry> entries_;  // (owns the entries; read through chunks_)
  std::unordered_map<std::string, std::uint32_t> index_;
  std::vector<std::unique_ptr<const Entry*[]>> owned_;        // the chunks
  std::array<std::atomic<const Entry**>, kChunks> chunks_{};  // id >> kChunkBits -> its chunk
  std::atomic<std::uint32_t> size_{0};                        // ids below it are published
};

}  // namespace

Op Op::symbol(std::string_view name) { return OpTable::get().intern(OpKind::Symbol, std::string(name), {}); }

Op Op::integer(std::int64_t value) {
  return OpTable::get().intern(OpKind::Int, std::to_string(value), {Number(value)});
}

Op Op::real(double value) {
  if (value == 0.0) value = 0.0;  // one interned zero: -0.0 == 0.0 numerically
  return OpTable::get().intern(OpKind::Real, format_number(Number(value)), {Number(value)});
}

Op Op::list(std::span<const Number> values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) text += ' ';
    text += format_number(values[i]);
  }
  text += ']';
  return OpTable::get().intern(OpKind::List, std::move(text), {values.begin(), values.end()});
}

OpKind Op::kind() const {
  return OpTable::get().with(*this, [](const Entry& e) { return e.kind; });
}

std::string Op::name() const {
  return OpTable::get().with(*this, [](const Entry& e) { return e.text; });
}

std::optional<Number> Op::number() const {
  return OpTable::get().with(*this, [](const Entry& e) -> std::optional<Number> {
    if (e.kind == OpKind::Int || e.kind == OpKind::Real) return e.numbers.front();
    return std::nullopt;
  });
}

std::vector<Number> Op::list_value() const {
  return OpTable::get().with(*this,
                             [](const Entry& e) { return e.kind == OpKind::List ? e.numbers : std::vector<Number>{}; });
}

}  // namespace saturn::egraph
