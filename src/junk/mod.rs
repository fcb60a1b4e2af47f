//! The junk classifier: features of a message (`tokens`), a naive Bayes model over them
//! (`model`), its score on SpamAssassin's scale with the caller's evidence (`verdict`), the
//! models cached over their counts in the store (`models`), and training from directories of
//! messages (`train`). Nothing here decides where mail goes: inbound, the API and IMAP call it.

mod hash;
pub mod model;
mod models;
pub mod tokens;
mod train;
mod verdict;

pub use hash::token_hash;
pub use model::{Counts, Model, Score};
pub use models::Models;
pub use tokens::{Features, features, features_of};
pub use train::{Trained, train_dirs};
pub use verdict::{DEFAULT_JUNK, Thresholds, Verdict, bayes_points, verdict};
