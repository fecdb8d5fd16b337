// Reading and matching expectations.txt (expectations.h).
#include "expectations.h"

#include <sstream>

#include "fluxion/error.h"

namespace fluxion::selftest {

std::vector<Expectation> parse_expectations(const std::string& text, const std::string& source) {
  std::vector<Expectation> out;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    std::string content = line.substr(0, line.find('#'));
    std::istringstream words(content);
    Expectation e;
    if (!(words >> e.vendor)) continue;
    if (!(words >> e.min_version >> e.max_version >> e.check)) {
      std::string message = source;
      message += ":" + std::to_string(number);
      message += ": expected `vendor min-version max-version check reason...`, got: ";
      message += line;
      detail::fail("selftest expectations", message);
    }
    if (e.min_version == "*") e.min_version.clear();
    if (e.max_version == "*") e.max_version.clear();
    std::getline(words >> std::ws, e.reason);
    e.reason.erase(e.reason.find_last_not_of(" \t") + 1);
    out.push_back(e);
  }
  return out;
}

bool version_less(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  for (;;) {
    long p = 0, q = 0;
    bool more_a = static_cast<bool>(x >> p), more_b = static_cast<bool>(y >> q);
    if (!more_a && !more_b) return false;
    if (p != q) return p < q;
    x.ignore(1);
    y.ignore(1);
  }
}

const Expectation* expected_failure(const std::vector<Expectation>& list, const std::string& vendor,
                                    const std::string& driver_version, const std::string& check) {
  for (const Expectation& e : list) {
    if (e.vendor != vendor || e.check != check) continue;
    if (!e.min_version.empty() && version_less(driver_version, e.min_version)) continue;
    if (!e.max_version.empty() && !version_less(driver_version, e.max_version)) continue;
    return &e;
  }
  return nullptr;
}

}  // namespace fluxion::selftest
