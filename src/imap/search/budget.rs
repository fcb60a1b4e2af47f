//! The work one SEARCH may do beyond reading the folder, counted in bytes: of text decoded for
//! matching (lower-cased, HTML turned into text) and of text scanned, once per criterion.
//! Reading and parsing each message once is what a FETCH of the folder costs too; what a
//! search adds is the scanning, and criteria multiply it (`OR TEXT a OR TEXT b ...` reads every
//! message once per string). So a search earns `PER_BYTE` bytes of work for each byte of mail it
//! reads, on top of `BASE`: a few full-text criteria over any folder, however large, while
//! hundreds of strings stop at once. Past the budget the search stops and answers `NO [LIMIT]`
//! rather than a partial list the client would take as complete.

use std::cell::Cell;

/// Work a search may do whatever it reads (header searches over small folders never get near).
pub const BASE: u64 = 64 << 20;
/// Work earned per byte of mail read. Decoded text is at most about three times the bytes it
/// came from (Latin-1 doubles in UTF-8, fields are kept raw and decoded), and a TEXT criterion
/// scans the header and the body once: eight allows a few such criteria on any message.
pub const PER_BYTE: u64 = 8;

/// What is left of a search's budget, spent from the criteria of one chunk of messages (on one
/// blocking thread, hence `Cell`s).
pub struct Budget {
    left: Cell<u64>,
    exhausted: Cell<bool>,
}

impl Budget {
    pub fn new(left: u64) -> Budget {
        Budget { left: Cell::new(left), exhausted: Cell::new(false) }
    }

    /// Adds what reading `bytes` of mail earns.
    pub fn earn(&self, bytes: usize) {
        let earned = (bytes as u64).saturating_mul(PER_BYTE);
        self.left.set(self.left.get().saturating_add(earned));
    }

    /// Takes `bytes` of work; false (and exhausted from then on) when they are not left.
    pub fn spend(&self, bytes: usize) -> bool {
        match self.left.get().checked_sub(bytes as u64) {
            Some(rest) if !self.exhausted.get() => {
                self.left.set(rest);
                true
            }
            _ => {
                self.left.set(0);
                self.exhausted.set(true);
                false
            }
        }
    }

    pub fn exhausted(&self) -> bool {
        self.exhausted.get()
    }

    pub fn left(&self) -> u64 {
        self.left.get()
    }
}

#[cfg(test)]
mod tests {
    use super::{Budget, PER_BYTE};

    #[test]
    fn spending_past_the_budget_exhausts_it_for_good() {
        let b = Budget::new(10);
        assert!(b.spend(4) && b.spend(6) && !b.exhausted());
        assert!(b.spend(0));
        assert!(!b.spend(1) && b.exhausted() && b.left() == 0);
        assert!(!b.spend(0), "nothing more once exhausted");
    }

    #[test]
    fn reading_mail_earns_work() {
        let b = Budget::new(0);
        b.earn(100);
        assert_eq!(b.left(), 100 * PER_BYTE);
        assert!(b.spend(100 * PER_BYTE as usize) && !b.spend(1));
        let rich = Budget::new(u64::MAX);
        rich.earn(usize::MAX);
        assert_eq!(rich.left(), u64::MAX);
    }
}
