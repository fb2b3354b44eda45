// SPDX-License-Identifier: MIT
// The console reporter of the runtime benchmarks that compare programs in one run: it keeps each
// benchmark's real and CPU times (the medians when repeated) and prints ratios of them at the end.
// On a shared machine the CPU-time ratios are the steadier.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

namespace bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const std::string name = r.run_name.function_name;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (median || (r.run_type == Run::RT_Iteration && !has_median_.count(name))) {
        times_[name] = {r.GetAdjustedRealTime(), r.GetAdjustedCPUTime()};
        if (median) has_median_[name] = true;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  /// Prints the table's heading; call once before the `ratio` rows.
  static void print_heading() {
    std::printf("\nratios in the same run (medians when repeated)   real time   CPU time\n");
  }

  /// One row, `a / b`, when both benchmarks ran (a filter may have left one out).
  void ratio(const char* what, const char* a, const char* b) const {
    if (times_.count(a) && times_.count(b))
      std::printf("  %-46s %9.2f %10.2f\n", what, times_.at(a).first / times_.at(b).first,
                  times_.at(a).second / times_.at(b).second);
  }

 private:
  std::map<std::string, std::pair<double, double>> times_;
  std::map<std::string, bool> has_median_;
};

}  // namespace bench
