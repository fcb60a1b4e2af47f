//! The day an out-of-office notice says its writer is back. Dates are read in the forms people
//! write them: ISO (`2026-12-03`), numeric with dots (`03.12.2026`, `3.12.`), with slashes
//! (`12/03/2026`, day first unless the text reads as English; never without a year, which
//! would read fractions as dates), and with month names in English,
//! German, French and Spanish (`December 3rd, 2026`, `3. Dezember`, `le 3 décembre`,
//! `3 de diciembre de 2026`). Of the dates found from today to a year ahead the latest is taken:
//! a notice gives the first day away before the day back. A date without a year is its next
//! occurrence. None found: `None` (the enrollment is not paused).

use jiff::civil::Date;

/// Words read at most: a notice names its dates in its first lines.
const MAX_TOKENS: usize = 600;

/// Month names and abbreviations, lower-case, with their numbers.
const MONTHS: &[(&str, i8)] = &[
    ("january", 1),
    ("jan", 1),
    ("januar", 1),
    ("janvier", 1),
    ("janv", 1),
    ("enero", 1),
    ("ene", 1),
    ("february", 2),
    ("feb", 2),
    ("februar", 2),
    ("février", 2),
    ("fevrier", 2),
    ("févr", 2),
    ("fév", 2),
    ("febrero", 2),
    ("march", 3),
    ("mar", 3),
    ("märz", 3),
    ("maerz", 3),
    ("mars", 3),
    ("marzo", 3),
    ("mär", 3),
    ("april", 4),
    ("apr", 4),
    ("avril", 4),
    ("avr", 4),
    ("abril", 4),
    ("abr", 4),
    ("may", 5),
    ("mai", 5),
    ("mayo", 5),
    ("june", 6),
    ("jun", 6),
    ("juni", 6),
    ("juin", 6),
    ("junio", 6),
    ("july", 7),
    ("jul", 7),
    ("juli", 7),
    ("juillet", 7),
    ("juil", 7),
    ("julio", 7),
    ("august", 8),
    ("aug", 8),
    ("août", 8),
    ("aout", 8),
    ("agosto", 8),
    ("ago", 8),
    ("september", 9),
    ("sep", 9),
    ("sept", 9),
    ("septembre", 9),
    ("septiembre", 9),
    ("setiembre", 9),
    ("october", 10),
    ("oct", 10),
    ("oktober", 10),
    ("okt", 10),
    ("octobre", 10),
    ("octubre", 10),
    ("november", 11),
    ("nov", 11),
    ("novembre", 11),
    ("noviembre", 11),
    ("december", 12),
    ("dec", 12),
    ("dezember", 12),
    ("dez", 12),
    ("décembre", 12),
    ("decembre", 12),
    ("déc", 12),
    ("diciembre", 12),
    ("dic", 12),
];

/// Words that make a text English, where `12/03` is December 3rd.
const ENGLISH: &[&str] = &[" the ", " i am ", "i'm ", " back ", " return", " until ", " office"];

/// The latest date from `today` to a year ahead named in `text`.
pub fn find(text: &str, today: Date) -> Option<Date> {
    let lower = text.to_lowercase();
    let english = ENGLISH.iter().any(|w| lower.contains(w));
    let tokens: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '!' | '?'))
        .filter(|t| !t.is_empty())
        .take(MAX_TOKENS)
        .collect();
    let limit = today.checked_add(jiff::Span::new().days(366)).unwrap_or(today);
    let mut best: Option<Date> = None;
    for i in 0..tokens.len() {
        let found = numeric(tokens[i], english).or_else(|| named(&tokens, i));
        let Some((year, month, day)) = found else { continue };
        let Some(date) = resolve(year, month, day, today) else { continue };
        if date >= today && date <= limit && best.is_none_or(|b| date > b) {
            best = Some(date);
        }
    }
    best
}

/// A year-less date is its next occurrence from `today`; a two-digit year is in this century.
fn resolve(year: Option<i16>, month: i8, day: i8, today: Date) -> Option<Date> {
    match year {
        Some(y) if y < 100 => Date::new(2000 + y, month, day).ok(),
        Some(y) => Date::new(y, month, day).ok(),
        None => {
            let this = Date::new(today.year(), month, day).ok()?;
            if this >= today { Some(this) } else { Date::new(today.year() + 1, month, day).ok() }
        }
    }
}

type Parts = (Option<i16>, i8, i8);

/// `2026-12-03`, `03.12.2026`, `3.12.`, `12/03/2026`, `03/12`.
fn numeric(token: &str, english: bool) -> Option<Parts> {
    let dotted_end = token.ends_with('.');
    let token = token.trim_end_matches(['.', ':']);
    let sep = token.chars().find(|c| !c.is_ascii_digit())?;
    if !matches!(sep, '.' | '/' | '-') {
        return None;
    }
    let parts: Vec<&str> = token.split(sep).collect();
    if parts.iter().any(|p| p.is_empty() || p.len() > 4 || !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let n = |p: &str| p.parse::<i16>().ok();
    match parts.as_slice() {
        [y, m, d] if y.len() == 4 && sep == '-' => Some((n(y), small(m)?, small(d)?)),
        [a, b, y] if y.len() == 4 || y.len() == 2 => {
            let (day, month) = order(small(a)?, small(b)?, sep, english)?;
            Some((Some(n(y)?), month, day))
        }
        // Without a year only the form that cannot be a decimal number, a time or a fraction:
        // `3.12.`.
        [a, b] if sep == '.' && dotted_end => {
            let (day, month) = order(small(a)?, small(b)?, sep, english)?;
            Some((None, month, day))
        }
        _ => None,
    }
}

/// Day and month of `a` and `b`: with slashes, month first in English unless impossible.
fn order(a: i8, b: i8, sep: char, english: bool) -> Option<(i8, i8)> {
    let month_first = sep == '/' && ((english && a <= 12) || b > 12);
    let (day, month) = if month_first { (b, a) } else { (a, b) };
    ((1..=12).contains(&month) && (1..=31).contains(&day)).then_some((day, month))
}

fn small(p: &str) -> Option<i8> {
    if p.len() > 2 {
        return None;
    }
    p.parse().ok()
}

fn month(token: &str) -> Option<i8> {
    let t = token.trim_end_matches(['.', ':']);
    MONTHS.iter().find(|(name, _)| *name == t).map(|(_, m)| *m)
}

/// `3`, `3.`, `3rd`, `1st`, `1er`, `3e`, `03`: a day of the month.
fn day(token: &str) -> Option<i8> {
    let t = token.trim_end_matches(['.', ':']);
    let digits: &str = &t[..t.bytes().take_while(u8::is_ascii_digit).count()];
    let rest = &t[digits.len()..];
    if digits.is_empty() || !matches!(rest, "" | "st" | "nd" | "rd" | "th" | "er" | "e" | "º") {
        return None;
    }
    small(digits).filter(|d| (1..=31).contains(d))
}

fn year(token: Option<&&str>) -> Option<i16> {
    let t = token?.trim_end_matches(['.', ':']);
    (t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok()).flatten()
}

/// A date around the month name at `i`: `3 December`, `3rd of December`, `3 de diciembre de
/// 2026`, `December 3rd, 2026`.
fn named(tokens: &[&str], i: usize) -> Option<Parts> {
    let m = month(tokens[i])?;
    let before = |k: usize| i.checked_sub(k).and_then(|j| tokens.get(j)).copied();
    let joiner = |t: Option<&str>| matches!(t, Some("of" | "de" | "du" | "des"));
    let day_before = match before(1) {
        t if joiner(t) => before(2).and_then(day),
        t => t.and_then(day),
    };
    if let Some(d) = day_before {
        let next = tokens.get(i + 1);
        let y = if joiner(next.copied()) { year(tokens.get(i + 2)) } else { year(next) };
        return Some((y, m, d));
    }
    let d = tokens.get(i + 1).and_then(|t| day(t))?;
    Some((year(tokens.get(i + 2)), m, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day_of(y: i16, m: i8, d: i8) -> Date {
        Date::new(y, m, d).expect("date") // ok: test
    }

    fn today() -> Date {
        day_of(2026, 11, 27)
    }

    #[test]
    fn reads_every_form() {
        let cases = [
            ("I am back on 2026-12-03.", day_of(2026, 12, 3)),
            ("Ab dem 03.12.2026 bin ich wieder erreichbar.", day_of(2026, 12, 3)),
            ("Ich bin bis 3.12. nicht im Büro.", day_of(2026, 12, 3)),
            ("I'm out of the office until 12/03/2026.", day_of(2026, 12, 3)),
            ("Je serai de retour le 03/12/2026.", day_of(2026, 12, 3)),
            ("I will return on December 3rd, 2026.", day_of(2026, 12, 3)),
            ("Back Dec. 3", day_of(2026, 12, 3)),
            ("Ich bin ab dem 3. Dezember wieder da.", day_of(2026, 12, 3)),
            ("Je serai absent jusqu'au 3 décembre.", day_of(2026, 12, 3)),
            ("Estaré de vuelta el 3 de diciembre de 2026.", day_of(2026, 12, 3)),
            ("Back on the 3rd of December", day_of(2026, 12, 3)),
            ("Back on January 5", day_of(2027, 1, 5)),
        ];
        for (text, want) in cases {
            assert_eq!(find(text, today()), Some(want), "{text}");
        }
    }

    #[test]
    fn the_latest_future_date_wins() {
        let text = "Away from 28.11.2026 to 04.12.2026, back on 07.12.2026. Sent 20.11.2026.";
        assert_eq!(find(text, today()), Some(day_of(2026, 12, 7)));
    }

    #[test]
    fn no_date_no_pause() {
        assert_eq!(find("I am on vacation with limited access to email.", today()), None);
        assert_eq!(find("Version 1.5 at 10.30 or 2/3 of them", today()), None);
        assert_eq!(find("back on 31.02.2027", today()), None);
        assert_eq!(find("back in 2030-01-01", today()), None);
    }
}
