//! The words automatic answers use, in English, German, French, Spanish, Italian, Dutch and
//! Portuguese. Compared lower-cased; subjects only at their start, so that a person's
//! "Re: out of office policy" stays a reply.

/// Subject starts of automatic answers: Exchange/Outlook ("Automatic reply:"), Dovecot
/// Pigeonhole ("Auto:"), and the subjects people give their vacation responders.
const AUTOMATIC_SUBJECTS: &[&str] = &[
    "automatic reply",
    "auto reply",
    "auto-reply",
    "autoreply",
    "auto:",
    "auto response",
    "auto-response",
    "autoresponse",
    "out of office",
    "out of the office",
    "away from the office",
    "away from my desk",
    "on vacation",
    "on holiday",
    "on leave",
    "vacation reply",
    "vacation response",
    "automatische antwort",
    "abwesenheitsnotiz",
    "abwesenheit",
    "abwesend",
    "nicht im büro",
    "außer haus",
    "im urlaub",
    "réponse automatique",
    "reponse automatique",
    "absence du bureau",
    "absent du bureau",
    "absent(e)",
    "absence",
    "en congés",
    "en vacances",
    "respuesta automática",
    "respuesta automatica",
    "fuera de la oficina",
    "fuera de oficina",
    "ausente",
    "de vacaciones",
    "risposta automatica",
    "fuori ufficio",
    "automatisch antwoord",
    "afwezig",
    "resposta automática",
    "ausência",
];

/// Words that make an automatic answer an out-of-office notice.
const OUT_OF_OFFICE: &[&str] = &[
    "out of office",
    "out of the office",
    "ooo",
    "on vacation",
    "on holiday",
    "on leave",
    "away from",
    "annual leave",
    "will be back",
    "back in the office",
    "zurück im büro",
    "wieder im büro",
    "de vuelta",
    "parental leave",
    "vacation",
    "abwesend",
    "abwesenheit",
    "nicht im büro",
    "außer haus",
    "urlaub",
    "absent",
    "absente",
    "absence",
    "de retour",
    "congé",
    "congés",
    "vacances",
    "fuera de la oficina",
    "fuera de oficina",
    "ausente",
    "vacaciones",
    "fuori ufficio",
    "ferie",
    "afwezig",
    "vakantie",
    "férias",
];

/// A person asking not to be written to again.
const STOP: &[&str] = &[
    "unsubscribe",
    "remove me",
    "take me off",
    "stop emailing",
    "stop sending",
    "stop contacting",
    "do not contact me",
    "don't contact me",
    "do not email me",
    "don't email me",
    "not interested, please remove",
    "abmelden",
    "austragen",
    "keine weiteren e-mails",
    "désabonner",
    "desabonner",
    "désinscrire",
    "ne plus recevoir",
    "darme de baja",
    "dar de baja",
    "darse de baja",
    "no me escriban",
    "cancelar suscripción",
];

/// Lines that start the quoted message under a reply: what follows is not the writer's text.
const QUOTE_STARTS: &[&str] = &[
    "-----original message-----",
    "----- original message -----",
    "-----ursprüngliche nachricht-----",
    "-----message d'origine-----",
    "-----mensaje original-----",
    "________________________________",
    "from: ",
    "von: ",
    "de : ",
    "de: ",
];

/// Subjects of delivery failure notices from a mailer daemon.
const BOUNCE_SUBJECTS: &[&str] = &[
    "undeliver",
    "delivery status notification",
    "delivery failure",
    "failure notice",
    "returned mail",
    "mail delivery failed",
    "unzustellbar",
    "non remis",
    "no se puede entregar",
];

/// Whether a subject starts the way automatic answers' subjects do.
pub fn automatic_subject(subject: &str) -> bool {
    let lower = subject.trim_start().to_lowercase();
    AUTOMATIC_SUBJECTS.iter().any(|m| {
        lower.strip_prefix(m).is_some_and(|rest| {
            // A whole word: "Absence" but not "Absences in the team?" or "Autumn".
            rest.chars().next().is_none_or(|c| !c.is_alphanumeric()) || m.ends_with(':')
        })
    })
}

/// Whether `text` speaks of being away.
pub fn out_of_office(text: &str) -> bool {
    let lower = text.to_lowercase();
    OUT_OF_OFFICE.iter().any(|m| contains_word(&lower, m))
}

/// Whether a person's text asks us to stop writing.
pub fn asks_to_stop(text: &str) -> bool {
    let lower = text.to_lowercase();
    STOP.iter().any(|m| contains_word(&lower, m))
}

/// Whether a line starts the quoted original under a reply ("On ... wrote:" included).
pub fn starts_quote(line: &str) -> bool {
    let lower = line.to_lowercase();
    if QUOTE_STARTS.iter().any(|q| lower.starts_with(q)) {
        return true;
    }
    let wrote = ["wrote:", "schrieb:", "a écrit :", "a écrit:", "escribió:"];
    // German puts the name after the verb: "Am 24.11.2026 um 10:00 schrieb Ada <a@x>:".
    let german = lower.starts_with("am ") && lower.contains(" schrieb ") && lower.ends_with(':');
    let opens = ["on ", "am ", "le ", "el "].iter().any(|p| lower.starts_with(p));
    german || (opens && wrote.iter().any(|w| lower.ends_with(w)))
}

pub fn bounce_subject(subject: &str) -> bool {
    let lower = subject.to_lowercase();
    BOUNCE_SUBJECTS.iter().any(|m| lower.contains(m))
}

/// Whether `needle` occurs in `hay` with no letter or digit right before or after it.
fn contains_word(hay: &str, needle: &str) -> bool {
    let mut from = 0;
    while let Some(at) = hay[from..].find(needle) {
        let start = from + at;
        let end = start + needle.len();
        let before = hay[..start].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = hay[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return true;
        }
        from = end;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_match_at_their_start_only() {
        assert!(automatic_subject("Automatic reply: Quick question"));
        assert!(automatic_subject("Abwesenheitsnotiz: Ihre Anfrage"));
        assert!(automatic_subject("Réponse automatique : Votre message"));
        assert!(automatic_subject("Auto: Quick question"));
        assert!(!automatic_subject("Re: out of office policy"));
        assert!(!automatic_subject("Absences in the team"));
        assert!(!automatic_subject("Autumn plans"));
    }

    #[test]
    fn words_are_whole() {
        assert!(out_of_office("I am on vacation until Monday"));
        assert!(!out_of_office("the zoo is nice"));
        assert!(asks_to_stop("please UNSUBSCRIBE me"));
        assert!(!asks_to_stop("we unsubscribed-ly agree"));
    }

    #[test]
    fn quote_lines() {
        assert!(starts_quote("On Tue, 24 Nov 2026 at 10:00, Ada <a@x.test> wrote:"));
        assert!(starts_quote("Am 24.11.2026 um 10:00 schrieb Ada:"));
        assert!(starts_quote("-----Original Message-----"));
        assert!(!starts_quote("On Monday I can talk."));
    }
}
