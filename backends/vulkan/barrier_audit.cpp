// The barrier audit (barrier_audit.h). Written apart from the recorder's own bookkeeping: it
// compares every dispatch pairwise with each earlier one since the last barrier, where the
// recorder keeps running sets.
#include "backends/vulkan/barrier_audit.h"

#include <string>

#include "fluxion/error.h"
#include "support/settings.h"

namespace fluxion::vulkan {
namespace {

bool overlap(const Range& a, const Range& b) { return a.io == b.io && a.begin < b.end && b.begin < a.end; }

// The first range of `later` that overlaps one of `earlier`, or null.
const Range* first_overlap(const std::vector<Range>& later, const std::vector<Range>& earlier) {
  for (const Range& l : later) {
    for (const Range& e : earlier) {
      if (overlap(l, e)) return &l;
    }
  }
  return nullptr;
}

std::string describe(const Recording& r, size_t i) {
  const Dispatch& d = r.dispatches[i];
  return "dispatch " + std::to_string(i) + " (" + (d.name >= 0 ? r.names[static_cast<size_t>(d.name)] : "?") + ")";
}

}  // namespace

// Its default, on in Debug builds, is the setting's (support/settings.def).
bool barrier_audit_enabled() { return support::enabled(support::Setting::vulkan_audit_barriers); }

void audit_barriers(const Recording& r) {
  if (r.accesses.size() != r.dispatches.size())
    detail::fail("vulkan", "internal error: the barrier audit needs every dispatch's accesses");
  size_t epoch = 0;  // first dispatch since the last barrier
  for (size_t j = 0; j < r.dispatches.size(); ++j) {
    if (r.dispatches[j].barrier_before) epoch = j;
    const Access& later = r.accesses[j];
    for (size_t i = epoch; i < j; ++i) {
      const Access& earlier = r.accesses[i];
      struct Hazard {
        const std::vector<Range>& later;
        const std::vector<Range>& earlier;
        const char* what;
      };
      const Hazard hazards[] = {{later.reads, earlier.writes, "reads bytes the earlier wrote (read after write)"},
                                {later.writes, earlier.writes, "writes bytes the earlier wrote (write after write)"},
                                {later.writes, earlier.reads, "writes bytes the earlier read (write after read)"}};
      const char* hazard = nullptr;
      const Range* at = nullptr;
      for (const Hazard& h : hazards) {
        at = first_overlap(h.later, h.earlier);
        if (at) {
          hazard = h.what;
          break;
        }
      }
      if (!hazard) continue;
      detail::fail("vulkan barrier audit", "no barrier between " + describe(r, i) + " and " + describe(r, j) +
                                               ": the later " + hazard + ", bytes [" + std::to_string(at->begin) +
                                               ", " + std::to_string(at->end) + ") of io entry " +
                                               std::to_string(at->io));
    }
  }
}

}  // namespace fluxion::vulkan
