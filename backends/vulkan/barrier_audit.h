// A check of a recording's synchronisation (docs/vulkan.md, "Barrier audit"): every pair of
// dispatches where the later one reads what the earlier wrote, or writes what it read or wrote,
// must have a barrier between them. lavapipe runs dispatches one after another, so a missing
// barrier passes every test there and corrupts results on a GPU; the audit finds it anyway.
// On in Debug builds and under FLUXION_VULKAN_AUDIT_BARRIERS=1.
#pragma once

#include "backends/vulkan/recorder.h"

namespace fluxion::vulkan {

// Whether recordings are audited: FLUXION_VULKAN_AUDIT_BARRIERS when set, else on in Debug builds.
bool barrier_audit_enabled();

// Raises Error naming the first hazard of `r` that no barrier covers. `r` holds accesses.
void audit_barriers(const Recording& r);

}  // namespace fluxion::vulkan
