// The names the backend tests write the library with: `fx::` for fluxion, its value types
// unqualified, and test_util.h's helpers. Only test files include this (it declares names in the
// global namespace), so that each starts with what it tests rather than the same preamble.
#pragma once

#include "common/test_util.h"

namespace fx = fluxion;
using fx::Array;
using fx::Backend;
using fx::DType;
using fx::Shape;
using fx::Tensor;
using namespace fx::testing;
