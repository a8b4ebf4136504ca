//! When and how long to wait before retrying a failed model call: exponential backoff with
//! jitter, or exactly what the provider asked for (capped). Only retryable errors qualify.

use std::time::Duration;

use super::error::LlmError;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first retry when the provider names none; doubles each time.
    pub base_delay: Duration,
    /// Upper bound for any single delay, including provider-requested ones.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_retries: 3, base_delay: Duration::from_millis(1000), max_delay: Duration::from_secs(60) }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        Self { max_retries: 0, ..Self::default() }
    }

    /// How long to wait before retry number `retry` (0-based) after `error`, or `None` when the
    /// error is final or the retries are used up.
    pub fn delay(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        if retry >= self.max_retries || !error.is_retryable() {
            return None;
        }
        if let Some(asked) = error.retry_after() {
            return Some(asked.min(self.max_delay));
        }
        let exp = self.base_delay.saturating_mul(2u32.saturating_pow(retry.min(16)));
        // Full jitter over the upper half keeps clients that failed together from retrying together.
        let jittered = exp.mul_f64(0.5 + fastrand::f64() * 0.5);
        Some(jittered.min(self.max_delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;

    fn rate_limit(after: Option<Duration>) -> LlmError {
        LlmError::RateLimit {
            provider: ProviderKind::OpenAi,
            message: "slow down".into(),
            retry_after: after,
        }
    }

    #[test]
    fn honours_retry_after_and_caps_it() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0, &rate_limit(Some(Duration::from_secs(2)))), Some(Duration::from_secs(2)));
        assert_eq!(p.delay(0, &rate_limit(Some(Duration::from_secs(600)))), Some(p.max_delay));
    }

    #[test]
    fn backs_off_exponentially_within_bounds() {
        let p = RetryPolicy::default();
        for retry in 0..3 {
            let d = p.delay(retry, &rate_limit(None)).unwrap();
            let full = p.base_delay * 2u32.pow(retry);
            assert!(d >= full / 2 && d <= full, "{retry}: {d:?}");
        }
        assert_eq!(p.delay(3, &rate_limit(None)), None);
    }

    #[test]
    fn never_retries_auth_or_quota() {
        let p = RetryPolicy::default();
        let auth = LlmError::Authentication {
            provider: ProviderKind::Anthropic,
            var: "X".into(),
            message: "no".into(),
        };
        let quota = LlmError::QuotaExceeded { provider: ProviderKind::OpenAi, message: "no".into() };
        assert_eq!(p.delay(0, &auth), None);
        assert_eq!(p.delay(0, &quota), None);
    }
}
