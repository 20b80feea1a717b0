// Thrust's namespace macros without Thrust (CuPy's copy includes thrust/detail/config/namespace.h)
#pragma once
#define THRUST_NAMESPACE_BEGIN namespace thrust {
#define THRUST_NAMESPACE_END }
