#include "extract/calibration_pass.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "extract/cost_model.hpp"

namespace saturn::extract {

CalibrationPass run_calibration_pass(const std::map<std::string, TimedOp>& ops, Calibration& c, const OpTimer& time,
                                     const CostModel* roofline, double budget_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto out_of_time = [&] { return std::chrono::duration<double>(Clock::now() - start).count() > budget_s; };
  CalibrationPass pass;
  // Measured over roofline, per op timed, and by op name.
  std::vector<std::pair<const std::pair<const std::string, TimedOp>*, double>> ratio;
  std::map<std::string, std::vector<double>> ratios_of;
  for (const auto& entry : ops) {
    if (out_of_time()) {
      pass.budget_hit = true;
      return pass;
    }
    const auto& [sig, op] = entry;
    auto us = time(op);
    if (!us) {
      pass.failed.push_back({sig, us.error().message});
      continue;
    }
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
  std::vector<const std::pair<const std::string, TimedOp>*> suspect;
  for (const auto& [entry, r] : ratio) {
    auto it = usual.find(entry->second.def->name);
    if (r > kSecondLookRatio || (it != usual.end() && r > kSecondLookRatio * it->second)) suspect.push_back(entry);
  }
  for (const auto* entry : suspect) {
    if (out_of_time()) {
      pass.budget_hit = true;
      break;
    }
    auto us = time(entry->second);
    if (!us) continue;  // the first measurement stands
    const double kept = c.us[entry->first];
    pass.second_looks.push_back({entry->first, kept, *us});
    // (Its roofline price and family as the first measurement recorded them.)
    const auto modeled = c.roofline_us.find(entry->first);
    const auto family = c.family_of.find(entry->first);
    c.record(entry->first, std::min(kept, *us), modeled == c.roofline_us.end() ? 0 : modeled->second,
             family == c.family_of.end() ? std::string() : family->second);
  }
  return pass;
}

}  // namespace saturn::extract
