// log Σ exp over a row of logits: the normalizer a log-probability subtracts (a scored prompt's
// every row, 49,152 to 262,144 values each). The reference sums in double with libm's exp; the
// fast path takes 8 lanes at a time with ck_v_expf and float partial sums (relative error of
// the sum ~1e-6, far below what a log-probability of a quantized model can tell apart).
// NaN and -inf are impossible tokens: they weigh 0, as in Sampler.logSoftmax.
#include "internal.h"

static float row_max(const float *x, int n) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (x[i] > m) m = x[i];
    }
    return m;
}

float ck_logsumexp_ref(const float *x, int n) {
    const float m = row_max(x, n);
    if (!(m > -INFINITY)) return -INFINITY;
    double s = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] > -INFINITY) s += exp((double)x[i] - (double)m);
    }
    return (float)((double)m + log(s));
}

#if CK_X86
CK_FAST static float logsumexp_fast(const float *x, int n) {
    __m256 vm = _mm256_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
    float m = -INFINITY;
    float lanes[8];
    _mm256_storeu_ps(lanes, vm);
    for (int k = 0; k < 8; k++) {
        if (lanes[k] > m) m = lanes[k];
    }
    for (int k = i; k < n; k++) {
        if (x[k] > m) m = x[k];
    }
    if (!(m > -INFINITY)) return -INFINITY;
    const __m256 vmax = _mm256_set1_ps(m);
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    i = 0;
    for (; i + 16 <= n; i += 16) {
        // NaN compares false: its lane is masked to 0; -inf gives exp 0 on its own.
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        const __m256 ea = ck_v_expf(_mm256_sub_ps(a, vmax)), eb = ck_v_expf(_mm256_sub_ps(b, vmax));
        s0 = _mm256_add_ps(s0, _mm256_and_ps(ea, _mm256_cmp_ps(a, a, _CMP_ORD_Q)));
        s1 = _mm256_add_ps(s1, _mm256_and_ps(eb, _mm256_cmp_ps(b, b, _CMP_ORD_Q)));
    }
    float s = ck_hsum8(_mm256_add_ps(s0, s1));
    for (; i < n; i++) {
        if (x[i] > -INFINITY) s += expf(x[i] - m);
    }
    return m + logf(s);
}
#endif

float ck_logsumexp(const float *x, int n) {
#if CK_X86
    if (ck_fast_paths_enabled()) return logsumexp_fast(x, n);
#endif
    return ck_logsumexp_ref(x, n);
}
