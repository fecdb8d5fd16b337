// What a run produces: the printed table with its ratios, the agreement check between systems,
// and the JSON file.
#pragma once

#include <string>
#include <vector>

#include "harness.h"

namespace bench {

// Warnings for every (workload, mode) where a system's loss (or gradient norm) differs from the
// reference system's (handwritten, else libtorch) by a relative difference above `tolerance`.
std::vector<std::string> check_agreement(const std::vector<Record>& records, double tolerance = 1e-3);

// One row per (workload, system): primal and grad/step medians (mins), grad/primal, the ratios
// to handwritten and to libtorch, allocations, round trips and compile times.
void print_table(const std::vector<Record>& records, const std::vector<std::string>& warnings);

// One row per (workload, system, mode) measured at threads[0]: its median at each thread count
// and the speed-up over threads[0] (that median over this one).
void print_speedups(const std::vector<Record>& records, const std::vector<int>& threads);

// Writes `records` as a JSON list, one record per line, through a temporary file renamed over
// `path`. With `append`, records already in `path` are kept unless this run measured the same
// (workload, system, mode, threads). Returns false (after printing why) when writing fails.
bool write_json(const std::string& path, const std::vector<Record>& records, bool append);

}  // namespace bench
