//! The statistical model: naive Bayes over token presence, as SpamBayes, bogofilter and mox do.
//! Each token's spam probability is Robinson's f(w), which pulls tokens seen in few messages
//! toward "unknown" (0.5); the most telling tokens (furthest from 0.5, at most
//! [`MAX_CLUES`]) are combined with Fisher's chi-square method, which answers near 0 or 1 only
//! when the evidence agrees and near 0.5 when it is mixed or thin.
//!
//! Why this and not logistic regression over hashed features: it trains incrementally with one
//! counter update per token (a message moved to Junk is one write, and moved back is the exact
//! inverse), needs no passes over stored mail, and combines a mailbox's counts with the global
//! ones by adding them. On the SpamAssassin development split (`benches/spam.sh`, 70% trained,
//! 30% held out) it catches about 99% of spam while flagging no ham at the default threshold;
//! see docs/performance.md for the measured figures.

use super::hash::TokenMap;
use super::tokens::Features;

/// Robinson's strength of the prior: how many messages' worth of evidence "unknown" weighs.
const STRENGTH: f64 = 0.45;
/// Robinson's prior: a token never seen says nothing.
const PRIOR: f64 = 0.5;
/// Tokens closer than this to 0.5 are left out of the combination (SpamBayes' default).
const MIN_DEVIATION: f64 = 0.1;
/// The most telling tokens combined, at most (SpamBayes' default).
const MAX_CLUES: usize = 150;
/// Messages of each class a model needs before its opinion counts.
pub const MIN_TRAINED: u64 = 5;
/// Tokens named as the reasons of a verdict.
const REASONS: usize = 5;

/// How many trained spam and ham messages held a token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub spam: u32,
    pub ham: u32,
}

/// The counts of one scope: trained messages per class, and per token.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub spam_messages: u64,
    pub ham_messages: u64,
    pub tokens: TokenMap<Counts>,
}

/// What the model says of a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// The spam probability, 0..1; `None` when too little was trained to tell.
    pub probability: Option<f64>,
    /// The most telling tokens in the direction of the verdict, as (token text, f(w)).
    pub strongest: Vec<(String, f64)>,
}

impl Model {
    /// Whether nothing was learned into this model (or all of it was taken back).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty() && self.spam_messages == 0 && self.ham_messages == 0
    }

    /// Counts `features` as one more message of class `spam`.
    pub fn learn(&mut self, features: &Features, spam: bool) {
        for &token in &features.hashes {
            let c = self.tokens.entry(token).or_default();
            if spam {
                c.spam = c.spam.saturating_add(1);
            } else {
                c.ham = c.ham.saturating_add(1);
            }
        }
        if spam {
            self.spam_messages += 1;
        } else {
            self.ham_messages += 1;
        }
    }

    /// Takes back a message learned as class `spam`: the exact inverse of `learn`, saturating
    /// at 0 (and forgetting tokens left with no counts).
    pub fn unlearn(&mut self, features: &Features, spam: bool) {
        for &token in &features.hashes {
            let Some(c) = self.tokens.get_mut(&token) else { continue };
            if spam {
                c.spam = c.spam.saturating_sub(1);
            } else {
                c.ham = c.ham.saturating_sub(1);
            }
            if *c == Counts::default() {
                self.tokens.remove(&token);
            }
        }
        if spam {
            self.spam_messages = self.spam_messages.saturating_sub(1);
        } else {
            self.ham_messages = self.ham_messages.saturating_sub(1);
        }
    }

    /// Scores `features` on this model's counts added to `base`'s (a mailbox's model starts
    /// from the global one: its own training adds to what everyone's taught).
    pub fn score(&self, base: Option<&Model>, features: &Features) -> Score {
        let spam_n = self.spam_messages + base.map_or(0, |b| b.spam_messages);
        let ham_n = self.ham_messages + base.map_or(0, |b| b.ham_messages);
        if spam_n < MIN_TRAINED || ham_n < MIN_TRAINED {
            return Score { probability: None, strongest: Vec::new() };
        }
        let (spam_n, ham_n) = (spam_n as f64, ham_n as f64);
        let mut clues: Vec<(u64, f64)> = Vec::with_capacity(features.hashes.len());
        for &token in &features.hashes {
            let own = self.tokens.get(&token).copied().unwrap_or_default();
            let other = base.and_then(|b| b.tokens.get(&token)).copied().unwrap_or_default();
            let (s, h) = (
                f64::from(own.spam) + f64::from(other.spam),
                f64::from(own.ham) + f64::from(other.ham),
            );
            if s + h == 0.0 {
                continue;
            }
            let f = robinson(s / spam_n, h / ham_n, s + h);
            if (f - 0.5).abs() >= MIN_DEVIATION {
                clues.push((token, f));
            }
        }
        if clues.len() > MAX_CLUES {
            clues.select_nth_unstable_by(MAX_CLUES, |a, b| {
                deviation(b.1).total_cmp(&deviation(a.1))
            });
            clues.truncate(MAX_CLUES);
        }
        let probability = fisher(clues.iter().map(|c| c.1));
        Score {
            probability: Some(probability),
            strongest: strongest(&mut clues, probability, features),
        }
    }
}

fn deviation(f: f64) -> f64 {
    (f - 0.5).abs()
}

/// Robinson's f(w): the token's spam ratio (`spam` and `ham` are the shares of each class's
/// messages that held it), moved toward the prior by how few messages (`n`) it was seen in.
fn robinson(spam: f64, ham: f64, n: f64) -> f64 {
    let p = spam / (spam + ham);
    ((STRENGTH * PRIOR) + n * p) / (STRENGTH + n)
}

/// Fisher's combination of the clues' f(w): 0 (ham) to 1 (spam), 0.5 without clues.
fn fisher(clues: impl Iterator<Item = f64>) -> f64 {
    let (mut ln_spam, mut ln_ham, mut n) = (0.0f64, 0.0f64, 0usize);
    for f in clues {
        // f(w) lies strictly between 0 and 1 by construction (the prior keeps it off the ends).
        ln_ham += f.ln();
        ln_spam += (1.0 - f).ln();
        n += 1;
    }
    if n == 0 {
        return 0.5;
    }
    let spamminess = 1.0 - chi2_survival(-2.0 * ln_spam, 2 * n);
    let hamminess = 1.0 - chi2_survival(-2.0 * ln_ham, 2 * n);
    ((spamminess - hamminess + 1.0) / 2.0).clamp(0.0, 1.0)
}

/// P(X >= x2) for a chi-square variable of `dof` (even) degrees of freedom: the series of the
/// Poisson form, exact for even degrees.
fn chi2_survival(x2: f64, dof: usize) -> f64 {
    let m = x2 / 2.0;
    let mut term = (-m).exp();
    let mut sum = term;
    for i in 1..dof / 2 {
        term *= m / i as f64;
        sum += term;
    }
    sum.min(1.0)
}

/// The most telling clues on the side of `probability`, with their text.
fn strongest(
    clues: &mut [(u64, f64)],
    probability: f64,
    features: &Features,
) -> Vec<(String, f64)> {
    let spammy = probability >= 0.5;
    clues.sort_unstable_by(|a, b| deviation(b.1).total_cmp(&deviation(a.1)));
    clues
        .iter()
        .filter(|c| (c.1 >= 0.5) == spammy)
        .filter_map(|&(token, f)| features.name(token).map(|name| (name.to_owned(), f)))
        .take(REASONS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tokens::features;
    use super::*;

    fn message(subject: &str, body: &str) -> Vec<u8> {
        format!("From: a@b.test\r\nSubject: {subject}\r\n\r\n{body}\r\n").into_bytes()
    }

    #[test]
    fn unlearn_undoes_learn_exactly() {
        let mut model = Model::default();
        let ham = features(&message("meeting notes", "agenda for tomorrow"));
        let spam = features(&message("cheap pills", "buy viagra now"));
        model.learn(&ham, false);
        let before = model.tokens.clone();
        model.learn(&spam, true);
        model.unlearn(&spam, true);
        assert_eq!(model.tokens, before);
        assert_eq!((model.spam_messages, model.ham_messages), (0, 1));
        model.unlearn(&ham, false);
        model.unlearn(&ham, false);
        assert!(model.tokens.is_empty());
        assert_eq!((model.spam_messages, model.ham_messages), (0, 0));
    }

    #[test]
    fn scores_follow_training_and_a_mailbox_adds_to_the_global_model() {
        let mut global = Model::default();
        for i in 0..10 {
            global.learn(&features(&message(&format!("cheap pills {i}"), "buy viagra now")), true);
            global.learn(&features(&message(&format!("meeting {i}"), "agenda and minutes")), false);
        }
        let own = Model::default();
        let spam = features(&message("cheap pills", "viagra"));
        let score = own.score(Some(&global), &spam);
        let p = score.probability.expect("trained"); // ok: test
        assert!(p > 0.9, "{p}");
        assert!(score.strongest.iter().any(|(t, _)| t == "viagra"), "{:?}", score.strongest);
        let ham = own.score(Some(&global), &features(&message("meeting", "agenda")));
        assert!(ham.probability.expect("trained") < 0.1); // ok: test
        assert_eq!(Model::default().score(None, &spam).probability, None, "untrained");
    }

    #[test]
    fn chi_square_survival_is_right_at_known_points() {
        assert!((chi2_survival(0.0, 4) - 1.0).abs() < 1e-12);
        // P(X >= 2) for 2 degrees of freedom is e^-1.
        assert!((chi2_survival(2.0, 2) - (-1.0f64).exp()).abs() < 1e-12);
        assert!(chi2_survival(1e6, 300) < 1e-100);
        assert_eq!(fisher(std::iter::empty()), 0.5);
    }
}
