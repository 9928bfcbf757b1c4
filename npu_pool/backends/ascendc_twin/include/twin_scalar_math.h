// Scalar math in the kernel's own code, counted for the cost model (twin_core.h,
// kScalarMathCycles): an expf or sqrtf the kernel calls element by element runs on the scalar
// unit as a software routine, which the twin would otherwise not see at all (it runs the call
// on the host CPU for free).
//
// The backend forces this header after the twin's own headers and before the kernel, only for a
// kernel whose text calls one of these functions (build.py, SCALAR_MATH_CALL). Each name becomes
// a function-like macro that wraps the call's first argument in a counting identity, so
// `expf(x)`, `std::exp(x)` and `::sqrtf(x)` all count once per call and compute what they did;
// the twin's headers, already read, keep their own calls uncounted (a vector Exp is costed as a
// vector instruction). The standard headers whose declarations use these names are read first:
// a kernel that includes one of them later gets the guarded, already-read copy.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <math.h>
#include <numeric>
#include <random>
#include <valarray>

#include "twin_core.h"

namespace evk_twin {

template <typename T>
inline T scalar_math_call(int math_class, T x) {  // the call's argument, unchanged
    ++state().counters.scalar_math[math_class];
    return x;
}

}  // namespace evk_twin

#define EVK_TWIN_T evk_twin::kScalarTranscendental
#define EVK_TWIN_R evk_twin::kScalarRoot
#define exp(x, ...) exp(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define expf(x, ...) expf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define exp2(x, ...) exp2(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define exp2f(x, ...) exp2f(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define expm1(x, ...) expm1(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define expm1f(x, ...) expm1f(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define log(x, ...) log(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define logf(x, ...) logf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define log2(x, ...) log2(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define log2f(x, ...) log2f(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define log10(x, ...) log10(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define log10f(x, ...) log10f(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define log1p(x, ...) log1p(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define log1pf(x, ...) log1pf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define pow(x, ...) pow(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define powf(x, ...) powf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define tanh(x, ...) tanh(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define tanhf(x, ...) tanhf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define sinh(x, ...) sinh(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define sinhf(x, ...) sinhf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define cosh(x, ...) cosh(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define coshf(x, ...) coshf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define sin(x, ...) sin(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define sinf(x, ...) sinf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define cos(x, ...) cos(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define cosf(x, ...) cosf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define tan(x, ...) tan(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define tanf(x, ...) tanf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define atan(x, ...) atan(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define atanf(x, ...) atanf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define atan2(x, ...) atan2(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define atan2f(x, ...) atan2f(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define erf(x, ...) erf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define erff(x, ...) erff(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define erfc(x, ...) erfc(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define erfcf(x, ...) erfcf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define cbrt(x, ...) cbrt(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define cbrtf(x, ...) cbrtf(evk_twin::scalar_math_call(EVK_TWIN_T, x), ##__VA_ARGS__)
#define sqrt(x, ...) sqrt(evk_twin::scalar_math_call(EVK_TWIN_R, x), ##__VA_ARGS__)
#define sqrtf(x, ...) sqrtf(evk_twin::scalar_math_call(EVK_TWIN_R, x), ##__VA_ARGS__)
#define hypot(x, ...) hypot(evk_twin::scalar_math_call(EVK_TWIN_R, x), ##__VA_ARGS__)
#define hypotf(x, ...) hypotf(evk_twin::scalar_math_call(EVK_TWIN_R, x), ##__VA_ARGS__)
