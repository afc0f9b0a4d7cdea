// SPDX-License-Identifier: MIT
/*
 * HVT_ASAN is 1 in a build under AddressSanitizer (GCC says so with __SANITIZE_ADDRESS__, clang with
 * __has_feature): its shadow maps count in what record locks, and its allocator cannot be measured as
 * malloc's.
 */
#ifndef HVMTRACE_SANITIZER_H
#define HVMTRACE_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define HVT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HVT_ASAN 1
#endif
#endif

#endif
