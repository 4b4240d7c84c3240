#include "lower/memory_plan.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace saturn::lower {

namespace {

constexpr std::size_t kAlign = 64;
std::size_t aligned(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Lifetime {
  int first = -1, last = -1;
};

// Per buffer: the first step writing it and the last step touching it.
std::vector<Lifetime> lifetimes(const Program& p) {
  std::vector<Lifetime> life(p.buffers.size());
  const int end = static_cast<int>(p.steps.size());
  for (int s = 0; s < end; ++s) {
    const Step& st = p.steps[static_cast<std::size_t>(s)];
    for (BufferId b : st.writes) {
      Lifetime& l = life[static_cast<std::size_t>(b)];
      if (l.first < 0) l.first = s;
      l.last = std::max(l.last, s);
    }
    for (BufferId b : st.reads)
      life[static_cast<std::size_t>(b)].last = std::max(life[static_cast<std::size_t>(b)].last, s);
  }
  for (BufferId b : p.outputs) life[static_cast<std::size_t>(b)].last = end;
  return life;
}

}  // namespace

void plan_memory(Program& p) {
  const std::size_t n = p.buffers.size();
  std::vector<Lifetime> life = lifetimes(p);
  // Storage groups (in-place results join their operand's group).
  std::vector<BufferId> root(n);
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](BufferId b) {
    while (root[static_cast<std::size_t>(b)] != b) b = root[static_cast<std::size_t>(b)];
    return b;
  };
  std::vector<Lifetime> group = life;
  std::vector<std::size_t> group_bytes(n);
  for (std::size_t b = 0; b < n; ++b) group_bytes[b] = p.buffers[b].bytes;
  p.in_place.clear();
  for (std::size_t s = 0; s < p.steps.size(); ++s) {
    const Step& st = p.steps[s];
    if (st.writes.size() != 1 || st.in_place_ok.empty()) continue;
    const BufferId w = st.writes[0];
    if (find(w) != w || p.buffers[static_cast<std::size_t>(w)].kind != BufferKind::Temp) continue;
    for (BufferId c : st.in_place_ok) {
      BufferId g = find(c);
      if (p.buffers[static_cast<std::size_t>(c)].kind != BufferKind::Temp) continue;
      if (group[static_cast<std::size_t>(g)].last != static_cast<int>(s)) continue;  // read later: keep it
      if (group_bytes[static_cast<std::size_t>(g)] < p.buffers[static_cast<std::size_t>(w)].bytes) continue;
      root[static_cast<std::size_t>(w)] = g;
      group[static_cast<std::size_t>(g)].last = life[static_cast<std::size_t>(w)].last;
      p.in_place.emplace_back(w, c);
      break;
    }
  }

  // Place groups, largest first.
  std::vector<BufferId> groups;
  p.naive_bytes = 0;
  for (std::size_t b = 0; b < n; ++b) {
    if (p.buffers[b].kind != BufferKind::Temp) continue;
    p.naive_bytes += aligned(p.buffers[b].bytes);
    if (find(static_cast<BufferId>(b)) == static_cast<BufferId>(b)) groups.push_back(static_cast<BufferId>(b));
  }
  std::stable_sort(groups.begin(), groups.end(), [&](BufferId a, BufferId b) {
    return group_bytes[static_cast<std::size_t>(a)] > group_bytes[static_cast<std::size_t>(b)];
  });
  p.offsets.assign(n, 0);
  p.arena_bytes = 0;
  std::vector<BufferId> placed;
  for (BufferId g : groups) {
    const Lifetime& lg = group[static_cast<std::size_t>(g)];
    const std::size_t size = aligned(group_bytes[static_cast<std::size_t>(g)]);
    // Intervals already taken during g's lifetime, by offset.
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (BufferId o : placed) {
      const Lifetime& lo = group[static_cast<std::size_t>(o)];
      if (lo.last < lg.first || lg.last < lo.first) continue;
      taken.emplace_back(p.offsets[static_cast<std::size_t>(o)],
                         p.offsets[static_cast<std::size_t>(o)] + aligned(group_bytes[static_cast<std::size_t>(o)]));
    }
    std::sort(taken.begin(), taken.end());
    std::size_t at = 0;
    for (const auto& [b, e] : taken) {
      if (at + size <= b) break;
      at = std::max(at, e);
    }
    p.offsets[static_cast<std::size_t>(g)] = at;
    p.arena_bytes = std::max(p.arena_bytes, at + size);
    placed.push_back(g);
  }
  for (std::size_t b = 0; b < n; ++b)
    if (p.buffers[b].kind == BufferKind::Temp)
      p.offsets[b] = p.offsets[static_cast<std::size_t>(find(static_cast<BufferId>(b)))];

  // The liveness lower bound: the most group bytes live at one step.
  p.lower_bound_bytes = 0;
  for (int s = 0; s <= static_cast<int>(p.steps.size()); ++s) {
    std::size_t live = 0;
    for (BufferId g : groups) {
      const Lifetime& l = group[static_cast<std::size_t>(g)];
      if (l.first <= s && s <= l.last) live += aligned(group_bytes[static_cast<std::size_t>(g)]);
    }
    p.lower_bound_bytes = std::max(p.lower_bound_bytes, live);
  }
}

void check_memory_plan(const Program& p) {
  std::vector<Lifetime> life = lifetimes(p);
  auto shares = [&](BufferId a, BufferId b) {
    for (const auto& [w, c] : p.in_place)
      if ((w == a && c == b) || (w == b && c == a)) return true;
    return false;
  };
  for (std::size_t a = 0; a < p.buffers.size(); ++a) {
    if (p.buffers[a].kind != BufferKind::Temp || life[a].first < 0) continue;
    for (std::size_t b = a + 1; b < p.buffers.size(); ++b) {
      if (p.buffers[b].kind != BufferKind::Temp || life[b].first < 0) continue;
      if (life[a].last < life[b].first || life[b].last < life[a].first) continue;
      const std::size_t a0 = p.offsets[a], a1 = a0 + p.buffers[a].bytes;
      const std::size_t b0 = p.offsets[b], b1 = b0 + p.buffers[b].bytes;
      if (a1 <= b0 || b1 <= a0 || p.buffers[a].bytes == 0 || p.buffers[b].bytes == 0) continue;
      if (shares(static_cast<BufferId>(a), static_cast<BufferId>(b))) continue;
      throw std::logic_error("memory plan: '" + p.buffers[a].name + "' and '" + p.buffers[b].name +
                             "' are live together and overlap in the arena");
    }
    if (p.offsets[a] + p.buffers[a].bytes > p.arena_bytes)
      throw std::logic_error("memory plan: '" + p.buffers[a].name + "' ends past the arena");
  }
}

}  // namespace saturn::lower
