// Validation-layer messages as test failures (vulkan_validation_failures.cpp, linked into every
// test executable).
#pragma once

namespace fluxion::testing {

// Makes each validation message fail the running test: the handler every test executable
// starts with, which a test that provokes messages on purpose reinstalls when it is done.
void fail_tests_on_validation_messages();

}  // namespace fluxion::testing
