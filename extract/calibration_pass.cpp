#include "extract/calibration_pass.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "extract/cost_model.hpp"

namespace saturn::extract {

CalibrationPass run_calibration_pass(const std::map<std::string, TimedOp>& ops, Calibration& c, const OpTimer& time,
                                     const CostModel* roofline, double budget_s, const LoadWatch& load) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto out_of_time = [&] { return std::chrono::duration<double>(Clock::now() - start).count() > budget_s; };
  auto watched = [&](const TimedOp& op, bool& crowded) {
    if (load.begin) load.begin();
    auto us = time(op);
    crowded = load.crowded && load.crowded();
    return us;
  };
  CalibrationPass pass;
  std::set<const std::pair<const std::string, TimedOp>*> crowded_ops;
  // Measured over roofline, per op timed, and by op name.
  std::vector<std::pair<const std::pair<const std::string, TimedOp>*, double>> ratio;
  std::map<std::string, std::vector<double>> ratios_of;
  for (const auto& entry : ops) {
    if (out_of_time()) {
      pass.budget_hit = true;
      return pass;
    }
    const auto& [sig, op] = entry;
    bool crowded = false;
    auto us = watched(op, crowded);
    if (!us) {
      pass.failed.push_back({sig, us.error().message});
      continue;
    }
    if (crowded) crowded_ops.insert(&entry);
    const double priced = roofline ? roofline->price(*op.def, op.attrs, op.in, op.out, false, &op.facts).cost : 0;
    c.record(sig, *us, priced, op_family(*op.def, op.attrs, op.in, op.out, op.facts));
    ++pass.measured;
    if (!(priced > 0) || !std::isfinite(priced)) continue;
    ratio.emplace_back(&entry, *us / priced);
    ratios_of[op.def->name].push_back(*us / priced);
  }
  // The median ratio of each op name measured kFamilySize times or more.
  std::map<std::string, double> usual;
  for (auto& [name, r] : ratios_of)
    if (r.size() >= kFamilySize) {
      std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end());
      usual[name] = r[r.size() / 2];
    }
  pass.crowded = static_cast<int>(crowded_ops.size());
  std::set<const std::pair<const std::string, TimedOp>*> suspect = std::move(crowded_ops);
  for (const auto& [entry, r] : ratio) {
    auto it = usual.find(entry->second.def->name);
    if (r > kSecondLookRatio || (it != usual.end() && r > kSecondLookRatio * it->second)) suspect.insert(entry);
  }
  for (const auto& entry : ops) {  // (in the pass's order)
    if (!suspect.count(&entry)) continue;
    if (out_of_time()) {
      pass.budget_hit = true;
      break;
    }
    bool crowded = false;
    auto us = watched(entry.second, crowded);
    if (!us) continue;  // the first measurement stands
    if (crowded) ++pass.crowded_again;
    pass.second_looks.push_back({entry.first, c.us.at(entry.first), *us});
    c.keep_faster(entry.first, *us);
  }
  return pass;
}

}  // namespace saturn::extract
