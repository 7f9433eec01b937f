import CKernels

/// Which of the C kernels' instruction sets this process runs, for logs and benchmark reports.
public enum CPUKernels {
    /// "avx512-vnni-bf16", "avx512-vnni", "avx2" or "portable". `INFERD_CPU=avx2` in the
    /// environment makes an AVX-512 machine run the AVX2 kernels (what an AMD Zen 3 runs).
    public static var name: String { String(cString: ck_cpu_kernels()) }
}
