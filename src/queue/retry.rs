//! When to try again: exponential backoff from `initial`, doubling per attempt, capped at
//! `max_interval`, with +-20% jitter so messages deferred together do not retry in lockstep.

use std::time::Duration;

/// The delay after failed attempt number `attempt` (1 for the first). `jitter` is uniform in
/// `[0, 1)`; 0.5 gives the nominal delay.
pub fn delay(attempt: u32, initial: Duration, max_interval: Duration, jitter: f64) -> Duration {
    let exponent = attempt.saturating_sub(1).min(32);
    let nominal = initial.saturating_mul(1u32 << exponent.min(31)).min(max_interval);
    let factor = 0.8 + 0.4 * jitter.clamp(0.0, 1.0);
    nominal.mul_f64(factor)
}

/// How many times an attempt's outcome is committed again after a fault that passes (a lost
/// race, a store out of reach) before it is given up and the message is tried again (at least
/// once): about ten minutes of a store out of reach.
pub const HOLD_TRIES: u32 = 600;

/// The pause before committing a held outcome again after lost race number `tries`: random,
/// so that racers do not meet again in step, and growing to about a second.
pub fn held_pause(tries: u32) -> Duration {
    let ceiling = 10u64 << tries.min(7);
    Duration::from_millis(5 + rand::random::<u64>() % ceiling)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn doubles_from_the_initial_delay_up_to_the_cap() {
        let schedule: Vec<u64> =
            (1..=8).map(|n| delay(n, 5 * MIN, 120 * MIN, 0.5).as_secs() / 60).collect();
        assert_eq!(schedule, [5, 10, 20, 40, 80, 120, 120, 120]);
    }

    #[test]
    fn jitter_stays_within_twenty_percent() {
        assert_eq!(delay(1, 5 * MIN, 120 * MIN, 0.0), Duration::from_secs(240));
        assert_eq!(delay(1, 5 * MIN, 120 * MIN, 1.0), Duration::from_secs(360));
    }

    #[test]
    fn huge_attempt_numbers_do_not_overflow() {
        assert_eq!(delay(u32::MAX, 5 * MIN, 120 * MIN, 0.5), 120 * MIN);
    }
}
