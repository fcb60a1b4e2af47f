//! Warmup message text, generated locally from templates and word banks (no network, no model).
//! Messages read like the short notes colleagues exchange: a greeting, two or three sentences
//! about an everyday topic, a sign-off. Filters score repetitive bodies as bulk mail, so every
//! part varies.

use rand::seq::IndexedRandom;
use rand::{Rng, RngExt};

/// A generated message: subject, plain text and a simple HTML rendering of the same text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    pub subject: String,
    pub text: String,
    pub html: String,
}

const TOPICS: &[&str] = &[
    "the quarterly plan",
    "next week's workshop",
    "the onboarding checklist",
    "our project timeline",
    "the customer survey",
    "the team offsite",
    "the budget review",
    "the new office layout",
    "Thursday's meeting",
    "the product roadmap",
    "the hiring update",
    "the training schedule",
    "the website refresh",
    "the vendor shortlist",
    "the support rota",
    "the conference trip",
    "the newsletter draft",
    "the pricing page",
    "the spring campaign",
    "the sales forecast",
];

const SUBJECTS: &[&str] = &[
    "Quick question about {t}",
    "Re-checking {t}",
    "Thoughts on {t}?",
    "Update on {t}",
    "Notes from {t}",
    "{T}: a few ideas",
    "Following up on {t}",
    "About {t}",
    "{T} - next steps",
    "Small change to {t}",
    "Can we talk about {t}?",
    "Draft for {t}",
];

const GREETINGS: &[&str] = &["Hi {n},", "Hello {n},", "Hey {n},", "Good morning {n},", "Hi {n}!"];

const OPENERS: &[&str] = &[
    "I hope your week is going well.",
    "Thanks again for your help yesterday.",
    "I was just looking at {t} again.",
    "I had a few minutes to go through {t}.",
    "Hope you had a good weekend.",
    "Sorry for the slow reply on this.",
    "I wanted to get back to you about {t}.",
    "It was good to catch up earlier.",
];

const MIDDLES: &[&str] = &[
    "Could you take a look at {t} when you have a moment?",
    "I think we are close on {t}, but I would like a second opinion.",
    "Would {d} work for a short call about it?",
    "I moved a couple of items around so {t} reads more clearly.",
    "Let me know if anything about {t} looks off to you.",
    "I added some notes on {t} and shared them with the team.",
    "Do you have the latest numbers for {t}?",
    "Maybe we can finish {t} by {d}.",
    "I can send over a summary of {t} before {d}.",
    "The feedback on {t} has been mostly positive so far.",
];

const DAYS: &[&str] =
    &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "tomorrow", "next week"];

const CLOSERS: &[&str] = &[
    "Thanks!",
    "Talk soon.",
    "Let me know what you think.",
    "No rush on this.",
    "Appreciate it.",
    "Have a great day.",
];

const SIGN_OFFS: &[&str] =
    &["Best,", "Thanks,", "Cheers,", "Regards,", "All the best,", "Best regards,"];

const REPLIES: &[&str] = &[
    "Thanks for the note. That sounds good to me.",
    "Good point, I will take a look at {t} {d}.",
    "Makes sense. {D} works for me.",
    "Thanks, I have added my comments on {t}.",
    "Sounds great, let's go ahead with that.",
    "Got it, thank you. I will get back to you by {d}.",
    "Happy to help with {t}. I will send my notes {d}.",
    "Thanks for the update, this looks good.",
];

fn pick<R: Rng + ?Sized>(rng: &mut R, list: &'static [&'static str]) -> &'static str {
    list.choose(rng).copied().unwrap_or("")
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A first name from an address or display name: `"Ada Lovelace" <ada@x>` -> Ada, `jane.doe@x`
/// -> Jane.
pub fn first_name(display: Option<&str>, address: &str) -> String {
    let from_display = display.and_then(|d| d.split_whitespace().next()).map(str::to_owned);
    let local = address.split('@').next().unwrap_or(address);
    let from_local = local.split(['.', '_', '-', '+']).find(|p| !p.is_empty()).unwrap_or("");
    let raw = from_display.unwrap_or_else(|| from_local.to_owned());
    let clean: String = raw.chars().filter(|c| c.is_alphanumeric()).take(40).collect();
    if clean.is_empty() { "there".into() } else { capitalize(&clean) }
}

fn fill<R: Rng + ?Sized>(rng: &mut R, template: &str, topic: &str, name: &str) -> String {
    let day = pick(rng, DAYS);
    template
        .replace("{T}", &capitalize(topic))
        .replace("{t}", topic)
        .replace("{D}", &capitalize(day))
        .replace("{d}", day)
        .replace("{n}", name)
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn render(subject: String, paragraphs: &[String]) -> Text {
    let text = paragraphs.join("\n\n");
    let html = paragraphs
        .iter()
        .map(|p| format!("<p>{}</p>", escape_html(p).replace('\n', "<br>")))
        .collect::<Vec<_>>()
        .join("\n");
    Text { subject, text: format!("{text}\n"), html: format!("<div>{html}</div>") }
}

/// A new message from `sender` (first name) to `recipient` (first name).
pub fn message<R: Rng + ?Sized>(rng: &mut R, sender: &str, recipient: &str) -> Text {
    let topic = pick(rng, TOPICS);
    let subject_template = pick(rng, SUBJECTS);
    let subject = fill(rng, subject_template, topic, recipient);
    let mut middles: Vec<&str> = MIDDLES.sample(rng, 2).copied().collect();
    if rng.random_bool(0.5) {
        middles.truncate(1);
    }
    let opener = pick(rng, OPENERS);
    let mut body = vec![fill(rng, opener, topic, recipient)];
    for m in middles {
        body.push(fill(rng, m, topic, recipient));
    }
    body.push(pick(rng, CLOSERS).to_owned());
    let greeting = pick(rng, GREETINGS);
    let paragraphs = vec![
        fill(rng, greeting, topic, recipient),
        body.join(" "),
        format!("{}\n{sender}", pick(rng, SIGN_OFFS)),
    ];
    render(subject, &paragraphs)
}

/// A short answer from `sender` to `recipient` about a message with `subject`.
pub fn reply<R: Rng + ?Sized>(rng: &mut R, subject: &str, sender: &str, recipient: &str) -> Text {
    let topic = TOPICS
        .iter()
        .find(|t| subject.to_ascii_lowercase().contains(&t.to_ascii_lowercase()))
        .copied()
        .unwrap_or("this");
    let subject = if subject.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("re:")) {
        subject.to_owned()
    } else {
        format!("Re: {subject}")
    };
    let (greeting, answer) = (pick(rng, GREETINGS), pick(rng, REPLIES));
    let paragraphs = vec![
        fill(rng, greeting, topic, recipient),
        format!("{} {}", fill(rng, answer, topic, recipient), pick(rng, CLOSERS)),
        format!("{}\n{sender}", pick(rng, SIGN_OFFS)),
    ];
    render(subject, &paragraphs)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn messages_are_varied_and_complete() {
        let mut rng = rand::rng();
        let all: Vec<Text> = (0..200).map(|_| message(&mut rng, "Ada", "Grace")).collect();
        for t in &all {
            assert!(!t.subject.trim().is_empty() && t.subject.chars().count() <= 78, "{t:?}");
            assert!(!t.subject.contains(['\r', '\n']));
            assert!(t.text.starts_with("H") || t.text.starts_with("G"), "{t:?}");
            assert!(t.text.contains("Grace") && t.text.trim_end().ends_with("Ada"), "{t:?}");
            assert!(t.html.starts_with("<div><p>") && t.html.contains("Grace"), "{t:?}");
            assert!(!t.text.contains('{'), "unfilled placeholder: {t:?}");
        }
        let bodies: HashSet<&str> = all.iter().map(|t| t.text.as_str()).collect();
        let subjects: HashSet<&str> = all.iter().map(|t| t.subject.as_str()).collect();
        assert!(bodies.len() >= 190, "only {} distinct bodies of 200", bodies.len());
        assert!(subjects.len() >= 60, "only {} distinct subjects of 200", subjects.len());
    }

    #[test]
    fn replies_keep_the_thread_subject() {
        let mut rng = rand::rng();
        let r = reply(&mut rng, "Update on the budget review", "Grace", "Ada");
        assert_eq!(r.subject, "Re: Update on the budget review");
        assert!(r.text.contains("Ada") && r.text.trim_end().ends_with("Grace"));
        assert!(!r.text.contains('{'));
        let again = reply(&mut rng, "RE: hello", "Grace", "Ada");
        assert_eq!(again.subject, "RE: hello");
        let distinct: HashSet<String> =
            (0..50).map(|_| reply(&mut rng, "About x", "G", "A").text).collect();
        assert!(distinct.len() >= 20, "{}", distinct.len());
    }

    #[test]
    fn names_come_from_display_names_or_local_parts() {
        assert_eq!(first_name(Some("Ada Lovelace"), "x@y.test"), "Ada");
        assert_eq!(first_name(None, "jane.doe@y.test"), "Jane");
        assert_eq!(first_name(None, "<>@y.test"), "there");
        assert_eq!(first_name(Some("\"<script>\""), "a@y.test"), "Script");
    }
}
