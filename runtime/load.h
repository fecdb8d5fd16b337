// Reading an exported program back (fluxion::load), in parts that the full library's
// load_or_compile reuses: the file, the check that its compiled form runs here, and the program.
#pragma once

#include <string>

#include "fluxion/compiled.h"
#include "runtime/artifact.h"

namespace fluxion::runtime {

// The artifact at `path`; raises Error when the file cannot be read or is not a readable
// artifact.
Artifact read_artifact(const std::string& path);

// Why `a`'s compiled form cannot run in this process ("" when it can): a backend this library
// does not load, another machine, a helper interface of another version, instruction-set
// extensions this CPU lacks.
std::string incompatibility(const Artifact& a);

// The program of `a` (whose incompatibility() is ""), loaded from `path`: its object code is
// linked into this process.
Compiled loaded_program(Artifact a, const std::string& path);

}  // namespace fluxion::runtime
