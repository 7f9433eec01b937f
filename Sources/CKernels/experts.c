// The router of a mixture-of-experts feed-forward, token by token, in llama.cpp's arithmetic
// (build_moe_ffn on the CPU backend):
//   - softmax over all experts' logits as ggml_soft_max computes it on AVX-512: the maximum, then
//     exp(x - max) by ggml_v_expf per 16 logits, each 16-lane sum reduced in float and added in
//     double, the logits past the last whole 16 by libm's expf (ggml's scalar tail), each added in
//     double; every probability times float(1 / sum). Or the sigmoid 1 / (1 + expf(-x)).
//   - the k most probable experts, highest first: ggml's argsort (std::sort, descending) and the
//     first k. Ties go to the lower index, which is what std::sort's insertion sort does for up to
//     16 experts; past 16 its introsort may order equal probabilities either way.
//   - or (CK_GATING_SOFTMAX_WEIGHT, gpt-oss) the logits themselves rank the experts, and the k
//     chosen logits' softmax (ggml_soft_max over those k, as above) weighs them.
//   - their probabilities as weights; with `normalize`, divided by their sum (in double over the
//     chosen order, rounded to float, clamped from below at 2^-14 as llama.cpp clamps it).
// Scalar: a router row is 4 to 128 values, nothing next to the experts' products, and one
// function is its own reference (MoERouterTests checks it against hand-computed cases).
#include "internal.h"

// ggml_soft_max of n values on AVX-512: exp(x - max) by ggml_v_expf per 16, each 16-lane sum
// reduced in float and added in double, the rest by libm's expf; then times float(1 / sum).
static void softmax_ggml(const float *x, int n, float *y) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = 0.0;
    int i = 0;
    for (; i + 15 < n; i += 16) {
        for (int l = 0; l < 16; l++) y[i + l] = ck_expf_ggml512(x[i + l] - max);
        sum += (double)ck_reduce16(y + i);
    }
    for (; i < n; i++) {
        y[i] = expf(x[i] - max);
        sum += (double)y[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int j = 0; j < n; j++) y[j] *= inv;
}

static void route_row(const float *logits, int n_expert, int k, int gating, int normalize, float *probs,
                      int32_t *ids, float *weights) {
    if (gating == CK_GATING_SIGMOID) {
        for (int i = 0; i < n_expert; i++) probs[i] = 1.0f / (1.0f + expf(-logits[i]));
    } else if (gating == CK_GATING_SOFTMAX_WEIGHT) {
        for (int i = 0; i < n_expert; i++) probs[i] = logits[i];
    } else {
        softmax_ggml(logits, n_expert, probs);
    }
    // Top k by selection: each pass takes the highest probability not yet taken (the lowest
    // index among equals).
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < n_expert; e++) {
            int taken = 0;
            for (int u = 0; u < j; u++) taken |= ids[u] == e;
            if (taken) continue;
            if (best < 0 || probs[e] > probs[best]) best = e;
        }
        ids[j] = best;
        weights[j] = probs[best];
    }
    if (gating == CK_GATING_SOFTMAX_WEIGHT) {
        float chosen[64];
        const int n = k < 64 ? k : 64;
        for (int j = 0; j < n; j++) chosen[j] = weights[j];
        softmax_ggml(chosen, n, weights);
    }
    if (normalize) {
        double sum = 0.0;
        for (int j = 0; j < k; j++) sum += (double)weights[j];
        float s = (float)sum;
        if (!(s >= 6.103515625e-5f)) s = 6.103515625e-5f;
        for (int j = 0; j < k; j++) weights[j] = weights[j] / s;
    }
}

void ck_moe_route(const float *logits, int n, int n_expert, int k, int gating, int normalize, float *probs,
                  int32_t *ids, float *weights) {
    for (int t = 0; t < n; t++) {
        route_row(logits + (size_t)t * n_expert, n_expert, k, gating, normalize, probs, ids + (size_t)t * k,
                  weights + (size_t)t * k);
    }
}

void ck_moe_combine(const float *expert_out, const float *weights, int n, int k, int width, float *out) {
    for (int t = 0; t < n; t++) {
        float *y = out + (size_t)t * width;
        const float *e = expert_out + (size_t)t * k * width;
        const float *w = weights + (size_t)t * k;
        for (int d = 0; d < width; d++) y[d] = e[d] * w[0];
        for (int j = 1; j < k; j++) {
            const float *ej = e + (size_t)j * width;
            for (int d = 0; d < width; d++) {
                // Two statements: the product rounds before the add (clang fuses only within one).
                const float weighted = ej[d] * w[j];
                y[d] = y[d] + weighted;
            }
        }
    }
}
