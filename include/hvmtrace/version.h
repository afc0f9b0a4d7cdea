/* SPDX-License-Identifier: MIT */
#ifndef HVMTRACE_VERSION_H
#define HVMTRACE_VERSION_H

#define HVT_VERSION "0.1.0"

#endif
