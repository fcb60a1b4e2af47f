//! Subject lines generated locally from templates and word banks (no network, no model): ten
//! different lines for an offer, coloured by tone and, when given, the industry. None is longer
//! than 78 characters (RFC 5322's recommended line length).

use rand::seq::{IndexedRandom, SliceRandom};

pub const TONES: [&str; 5] = ["professional", "friendly", "casual", "urgent", "curious"];
const MAX: usize = 78;

/// Templates per tone: `{o}` is the offer, `{i}` the industry (templates with `{i}` are used only
/// when one is given), `{w}` a word from the tone's bank. The last entry is the default.
type Tone = (&'static str, &'static [&'static str], &'static [&'static str]);
const TEMPLATES: &[Tone] = &[
    (
        "friendly",
        &[
            "A little something for you: {o}",
            "We thought you'd love {o}",
            "Good news! {o} is here",
            "Hi there, meet {o}",
            "Made with you in mind: {o}",
            "{o}, just for you",
            "You asked, we listened: {o}",
            "A {w} hello and {o}",
            "Your {i} friends have {o} for you",
            "Something {w} for {i} folks: {o}",
            "Say hello to {o}",
            "Here's to you: {o}",
        ],
        &["warm", "happy", "friendly", "cheerful"],
    ),
    (
        "casual",
        &[
            "So, about {o}...",
            "{o}? Yep, it's a thing now",
            "Quick one: {o}",
            "Heads up: {o}",
            "Got a sec? {o}",
            "{o} (you're gonna like this)",
            "No fluff, just {o}",
            "Psst... {o}",
            "{i} people, check out {o}",
            "Real talk: {o} for {i}",
            "Okay, {o} is pretty {w}",
            "This one's {w}: {o}",
        ],
        &["cool", "neat", "handy", "fun"],
    ),
    (
        "urgent",
        &[
            "Last chance: {o}",
            "Ends soon: {o}",
            "Don't miss {o}",
            "Only hours left for {o}",
            "Final call: {o}",
            "Act now: {o}",
            "Today only: {o}",
            "{o}: {w} spots left",
            "{i} alert: {o} ends tonight",
            "Before it's gone: {o} for {i}",
            "Time is running out on {o}",
            "Hurry, {o} won't last",
        ],
        &["few", "limited", "last", "final"],
    ),
    (
        "curious",
        &[
            "Have you seen {o} yet?",
            "What if {o} changed everything?",
            "The secret behind {o}",
            "Why everyone is talking about {o}",
            "Is {o} right for you?",
            "We didn't expect this from {o}",
            "The {w} truth about {o}",
            "Ever wondered about {o}?",
            "What {i} leaders know about {o}",
            "Could {o} be the {i} answer?",
            "A question about {o}",
            "You might be surprised by {o}",
        ],
        &["surprising", "simple", "hidden", "real"],
    ),
    (
        "professional",
        &[
            "Introducing {o}",
            "{o}: what you need to know",
            "Announcing {o}",
            "An update on {o}",
            "Discover {o}",
            "{o} is now available",
            "Your guide to {o}",
            "How {o} helps your team",
            "{o} for {i} teams",
            "A {w} approach to {i}: {o}",
            "Meet {o}, built for results",
            "The {w} way forward: {o}",
        ],
        &["better", "smarter", "proven", "modern"],
    ),
];

fn templates(tone: &str) -> (&'static [&'static str], &'static [&'static str]) {
    let found = TEMPLATES.iter().find(|(name, ..)| *name == tone);
    let (_, patterns, words) = found.or(TEMPLATES.last()).copied().unwrap_or(("", &[], &[]));
    (patterns, words)
}

/// Ten distinct subject lines. `offer` is non-empty; `tone` is one of `TONES`.
pub fn generate(offer: &str, industry: Option<&str>, tone: &str) -> Vec<String> {
    let offer = squash(offer);
    let industry = industry.map(squash).filter(|i| !i.is_empty());
    let (patterns, words) = templates(tone);
    let mut rng = rand::rng();
    let mut pool: Vec<&str> =
        patterns.iter().copied().filter(|p| industry.is_some() || !p.contains("{i}")).collect();
    pool.shuffle(&mut rng);
    let mut out: Vec<String> = Vec::with_capacity(10);
    for pattern in pool.iter().cycle().take(pool.len() * 3) {
        if out.len() == 10 {
            break;
        }
        let word = words.choose(&mut rng).copied().unwrap_or("new");
        let fixed = pattern.replace("{i}", industry.as_deref().unwrap_or("")).replace("{w}", word);
        // Shorten the offer, not the template, when the line would be too long.
        let room = MAX.saturating_sub(fixed.chars().count().saturating_sub(3));
        let line = capitalize(&fixed.replace("{o}", &shorten(&offer, room)));
        if !line.is_empty() && line.chars().count() <= MAX && !out.contains(&line) {
            out.push(line);
        }
    }
    let mut n = 2;
    while out.len() < 10 {
        // Only when the templates ran out of distinct lines (a tiny pool): number the rest.
        out.push(shorten(&format!("{} ({n})", shorten(&offer, MAX - 5)), MAX));
        n += 1;
    }
    out
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters, cut at a word boundary when possible.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let cut: String = s.chars().take(max).collect();
    match cut.rfind(' ') {
        Some(at) if at > max / 2 => cut[..at].trim_end_matches([',', ';', ':', '-']).to_owned(),
        _ => cut,
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_distinct_short_lines_for_every_tone() {
        for tone in TONES {
            for (offer, industry) in [
                ("our new CRM", Some("real estate")),
                ("free shipping on every order this week", None),
                (
                    "an extraordinarily long offer description that goes on and on well past any reasonable length",
                    Some("healthcare"),
                ),
            ] {
                let lines = generate(offer, industry, tone);
                assert_eq!(lines.len(), 10, "{tone}: {lines:?}");
                for line in &lines {
                    assert!(line.chars().count() <= MAX, "{tone}: {line:?} is too long");
                    assert!(!line.is_empty());
                }
                let mut unique = lines.clone();
                unique.sort();
                unique.dedup();
                assert_eq!(unique.len(), 10, "{tone}: duplicates in {lines:?}");
            }
        }
    }

    #[test]
    fn lines_mention_the_offer_and_the_industry() {
        let lines = generate("our new CRM", Some("real estate"), "professional");
        assert!(
            lines.iter().filter(|l| l.to_lowercase().contains("crm")).count() >= 8,
            "{lines:?}"
        );
        let industries: usize = (0..20)
            .map(|_| generate("our new CRM", Some("real estate"), "urgent"))
            .filter(|l| l.iter().any(|s| s.contains("real estate")))
            .count();
        assert!(industries > 0);
    }
}
