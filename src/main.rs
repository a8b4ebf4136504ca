//! The `agentls` binary: parses the command line and hands off to the library.

fn main() -> std::process::ExitCode {
    agentls::cli::main()
}

/// The two functions agentls took from glibc's libm (`pow` for `f64::powf`, `log2`), defined in
/// the binary: the dynamic loader then does not open and map `libm.so` at every start (nine page
/// faults and a dozen system calls of the server's cold start, see docs/benchmarks.md). The
/// `libm` crate's versions are musl's, which like glibc's come from ARM's optimized routines.
/// Only the executable itself resolves to them: it exports no symbols to shared libraries.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod libm_functions {
    #[unsafe(no_mangle)]
    extern "C" fn pow(x: f64, y: f64) -> f64 {
        libm::pow(x, y)
    }

    #[unsafe(no_mangle)]
    extern "C" fn log2(x: f64) -> f64 {
        libm::log2(x)
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// `f64::powf` and `f64::log2` reach the definitions above (this test binary has them too).
    #[test]
    fn powf_and_log2_keep_their_results_and_special_cases() {
        let (two, eight, ten) =
            (std::hint::black_box(2.0f64), std::hint::black_box(8.0f64), std::hint::black_box(10.0f64));
        assert_eq!(two.powf(ten), 1024.0);
        assert_eq!(ten.powf(-2.0), 0.01);
        assert_eq!(0.0f64.powf(std::hint::black_box(0.0)), 1.0);
        assert!((-eight).powf(1.0 / 3.0).is_nan());
        assert_eq!(eight.log2(), 3.0);
        assert_eq!(std::hint::black_box(0.0f64).log2(), f64::NEG_INFINITY);
        assert!(std::hint::black_box(-1.0f64).log2().is_nan());
        assert!((std::hint::black_box(1.5f64).powf(2.5) - 2.7556759606310752).abs() < 1e-15);
    }
}
