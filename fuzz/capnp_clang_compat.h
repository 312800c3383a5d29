// Lets clang 16 and newer compile Cap'n Proto's headers before 1.0.1 in C++20 (the fuzz build only;
// CMakeLists.txt force-includes it there). Those headers compare `const char*` with kj::StringPtr
// in capnp/blob.h but leave out that overload in C++20, which clang 16 then rejects
// (capnproto/capnproto#1622, fixed in 1.0.1). These are the missing overloads, written so that
// they cannot call themselves through C++20's rewritten comparisons.
#pragma once

#include <kj/string.h>

namespace kj {

inline bool operator==(const char* a, const StringPtr& b) { return b == StringPtr(a); }
inline bool operator!=(const char* a, const StringPtr& b) { return !(b == StringPtr(a)); }

}  // namespace kj
