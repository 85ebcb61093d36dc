// <immintrin.h> for the AVX-512 builds; include it before any header that includes
// <immintrin.h> itself (backend/cpu/avx2.h does), or the pragma below comes too late.
// GCC 12's AVX-512 intrinsics start from a self-initialized "undefined" register
// (`__m512 __Y = __Y;`), which -Wmaybe-uninitialized reports at every use (GCC bug 105593):
// silenced for the header's own lines only.
#pragma once
#pragma GCC diagnostic push
#if !defined(__clang__)   // clang has no such warning (the sanitizer builds are clang's)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
