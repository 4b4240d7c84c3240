#include "extract/calibration_pass.hpp"

#include <algorithm>
#include <chrono>

#include "extract/cost_model.hpp"

namespace saturn::extract {

CalibrationPass run_calibration_pass(const std::map<std::string, TimedOp>& ops, Calibration& c, const OpTimer& time,
                                     const CostModel* roofline, double budget_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto out_of_time = [&] { return std::chrono::duration<double>(Clock::now() - start).count() > budget_s; };
  CalibrationPass pass;
  std::vector<const std::pair<const std::string, TimedOp>*> suspect;
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
    c.us[sig] = *us;
    ++pass.measured;
    if (roofline && *us > kSecondLookRatio * roofline->cost(*op.def, op.attrs, op.in, op.out, false))
      suspect.push_back(&entry);
  }
  for (const auto* entry : suspect) {
    if (out_of_time()) {
      pass.budget_hit = true;
      break;
    }
    auto us = time(entry->second);
    if (!us) continue;  // the first measurement stands
    double& kept = c.us[entry->first];
    pass.second_looks.push_back({entry->first, kept, *us});
    kept = std::min(kept, *us);
  }
  return pass;
}

}  // namespace saturn::extract
