// devices.cpp: the Vulkan devices this machine has, and a choice of one.
#include <cstdio>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  try {
    int first_usable = -1;
    for (const fx::VulkanDeviceInfo& d : fx::vulkan_devices()) {
      std::printf("%d: %s (%s, %s)%s\n", d.index, d.name.c_str(), d.type.c_str(), d.api_version.c_str(),
                  d.usable ? "" : ", not usable");
      if (d.usable && first_usable < 0) first_usable = d.index;
    }
    if (first_usable >= 0) {
      // Optional, and only before the backend's first use: an index, or a name (Error if none matches).
      fx::select_vulkan_device(first_usable);
      std::printf("running on %s\n", fx::vulkan_device().name.c_str());
    }
    return 0;
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "devices: error: %s\n", e.what());
    return 1;
  }
}
