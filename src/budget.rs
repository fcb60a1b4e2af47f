//! A memory budget shared by many connections: one semaphore whose permits stand for 1 KiB
//! each. A connection holds what its message or literal in flight needs, grown as bytes come and
//! given back when the permit drops, so that all connections together never hold more than the
//! configured bytes, however many there are. SMTP's DATA and IMAP's literals draw on their own.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bytes one permit stands for.
const UNIT: usize = 1024;

#[derive(Clone)]
pub struct Budget {
    permits: Arc<Semaphore>,
    /// All the permits there are.
    units: usize,
    /// A holding grows by multiples of this many permits, so a message costs a few semaphore
    /// calls rather than one per KiB.
    step: usize,
}

impl Budget {
    /// A budget of `bytes` (at least `step` KiB), taken `step` KiB at a time.
    pub fn new(bytes: usize, step: usize) -> Budget {
        let step = step.max(1);
        let units = (bytes / UNIT).clamp(step, Semaphore::MAX_PERMITS);
        Budget { permits: Arc::new(Semaphore::new(units)), units, step }
    }

    /// The permits `bytes` take.
    pub fn units_of(bytes: usize) -> usize {
        bytes.div_ceil(UNIT)
    }

    /// Whether `bytes` could ever be covered, with the whole budget free.
    pub fn can_ever_cover(&self, bytes: usize) -> bool {
        Budget::units_of(bytes) <= self.units
    }

    /// Makes `held` cover `bytes`; `false` when the budget cannot, now (`held` is then as it
    /// was).
    pub fn cover(&self, held: &mut Option<OwnedSemaphorePermit>, bytes: usize) -> bool {
        let have = held.as_ref().map_or(0, |p| p.num_permits());
        let need = Budget::units_of(bytes);
        if need <= have {
            return true;
        }
        let more = (need - have).div_ceil(self.step) * self.step;
        // The last step may not fit whole in a small budget: take what is needed then.
        let more = if more > self.units { need - have } else { more };
        let Ok(more) = u32::try_from(more) else { return false };
        match self.permits.clone().try_acquire_many_owned(more) {
            Ok(permit) => {
                match held {
                    Some(p) => p.merge(permit),
                    None => *held = Some(permit),
                }
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holdings_grow_in_steps_and_come_back_when_dropped() {
        let budget = Budget::new(256 * 1024, 64);
        let mut a = None;
        assert!(budget.cover(&mut a, 1));
        assert_eq!(a.as_ref().map(|p| p.num_permits()), Some(64), "one step");
        assert!(budget.cover(&mut a, 100 * 1024));
        assert_eq!(a.as_ref().map(|p| p.num_permits()), Some(128));
        let mut b = None;
        assert!(budget.cover(&mut b, 128 * 1024));
        let mut c = None;
        assert!(!budget.cover(&mut c, 1), "the budget is spent");
        assert!(c.is_none());
        drop(a);
        assert!(budget.cover(&mut c, 1));
        assert!(budget.can_ever_cover(256 * 1024) && !budget.can_ever_cover(256 * 1024 + 1));
    }
}
