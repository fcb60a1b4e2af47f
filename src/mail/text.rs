//! A plain-text rendering of HTML for the text/plain alternative: block elements become line
//! breaks, links keep their target, scripts and styles vanish, entities are decoded.

/// The start of a body for listings: whitespace runs collapsed, at most 160 characters.
pub fn snippet(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(640));
    for (n, word) in text.split_whitespace().enumerate() {
        if n > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() >= 640 {
            break; // more than 160 characters already, however wide they are
        }
    }
    out.chars().take(160).collect()
}

/// Renders `html` as readable plain text.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    let mut pending_href: Option<String> = None;
    while let Some(lt) = rest.find('<') {
        push_text(&mut out, &rest[..lt]);
        rest = &rest[lt..];
        let Some(gt) = rest.find('>') else {
            rest = "";
            break;
        };
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        let closing = tag.starts_with('/');
        match name.as_str() {
            "script" | "style" | "head" | "title" if !closing => {
                // Skip everything up to the matching close tag.
                rest = match find_close(rest, &name) {
                    Some(at) => rest[at..].find('>').map_or("", |g| &rest[at + g + 1..]),
                    None => "",
                };
            }
            // More than two in a row end up as one blank line anyway; keeping runs short keeps
            // `newline` and the link check below from rescanning them (quadratic otherwise).
            "br" if !out.ends_with("\n\n") => out.push('\n'),
            "p" | "div" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "tr" | "table" | "ul"
            | "ol" | "blockquote" | "section" | "article" | "header" | "footer" => {
                newline(&mut out, 2)
            }
            "li" if !closing => {
                newline(&mut out, 1);
                out.push_str("- ");
            }
            "a" if !closing => pending_href = attribute(tag, "href"),
            "a" => {
                if let Some(href) = pending_href.take()
                    && href.starts_with("http")
                    && !out.trim_end().ends_with(href.as_str())
                {
                    out.push_str(&format!(" ({href})"));
                }
            }
            _ => {}
        }
    }
    push_text(&mut out, rest);
    let lines: Vec<&str> = out.lines().map(str::trim_end).collect();
    let mut text = String::with_capacity(out.len());
    let mut blank = 0;
    for line in lines {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 || text.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        text.push_str(line.trim_start());
        text.push('\n');
    }
    text.trim_end().to_owned()
}

/// Where `</name` starts in `s`, ASCII case aside, in time linear in `s` (lower-casing the rest
/// of the document at every `<style>` made many of them quadratic).
fn find_close(s: &str, name: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    memchr::memmem::find_iter(bytes, b"</").find(|&at| {
        bytes
            .get(at + 2..at + 2 + name.len())
            .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
    })
}

fn newline(out: &mut String, count: usize) {
    let have = out.chars().rev().take_while(|c| *c == '\n').take(count).count();
    for _ in have..count {
        out.push('\n');
    }
}

/// Appends text content: whitespace collapsed, entities decoded.
fn push_text(out: &mut String, raw: &str) {
    let decoded = decode_entities(raw);
    for word in decoded.split_whitespace() {
        if !out.is_empty() && !out.ends_with(['\n', ' ']) {
            out.push(' ');
        }
        out.push_str(word);
    }
    if decoded.ends_with(char::is_whitespace) && !out.ends_with(['\n', ' ']) && !out.is_empty() {
        out.push(' ');
    }
}

/// The value of attribute `name` in a tag's source (`a href="..."`).
pub fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(name) {
        let start = from + at;
        from = start + name.len();
        let before_ok = start == 0 || lower.as_bytes()[start - 1].is_ascii_whitespace();
        let after = lower[from..].trim_start();
        if !before_ok || !after.starts_with('=') {
            continue;
        }
        let value_start = tag.len() - after.len() + 1;
        let value = tag[value_start..].trim_start();
        let (quote, body) = match value.chars().next() {
            Some(q @ ('"' | '\'')) => (Some(q), &value[1..]),
            _ => (None, value),
        };
        let end = match quote {
            Some(q) => body.find(q).unwrap_or(body.len()),
            None => body.find(|c: char| c.is_ascii_whitespace() || c == '>').unwrap_or(body.len()),
        };
        return Some(decode_entities(&body[..end]));
    }
    None
}

pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        // Only the next few bytes: looking further at every `&` made `&&&...` quadratic.
        let end = rest.as_bytes().iter().take(11).position(|b| *b == b';');
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                _ => name
                    .strip_prefix("#x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_blocks_links_and_entities() {
        let html = "<html><head><title>x</title><style>p{color:red}</style></head><body>\
                    <h1>Hello&nbsp;there</h1><p>Fish &amp; chips<br>today</p>\
                    <ul><li>one</li><li>two</li></ul>\
                    <p>See <a href=\"https://example.com/a?b=1&amp;c=2\">our site</a>.</p>\
                    <script>alert(1)</script></body></html>";
        let text = html_to_text(html);
        assert_eq!(
            text,
            "Hello there\n\nFish & chips\ntoday\n\n- one\n- two\n\nSee our site (https://example.com/a?b=1&c=2) ."
        );
    }

    #[test]
    fn survives_broken_markup() {
        assert_eq!(html_to_text("a < b"), "a");
        assert_eq!(html_to_text("<p>unterminated &amp"), "unterminated &amp");
        assert_eq!(html_to_text(""), "");
    }

    #[test]
    fn hostile_markup_takes_linear_time() {
        // Each of these took seconds or minutes when a tag or an `&` rescanned the rest.
        let n = 200_000;
        let styles = "<style>x</STYLE>".repeat(n);
        assert_eq!(html_to_text(&format!("{styles}after")), "after");
        let breaks = format!("a{}{}", "<br>".repeat(n), "<p><a href=\"http://x\">x</a>".repeat(n));
        assert!(html_to_text(&breaks).starts_with("a\n\nx (http://x)"));
        let amps = "&".repeat(n);
        assert_eq!(html_to_text(&amps).len(), n);
        assert_eq!(decode_entities("&amp;&lt;&#x41;&#66;&unknown;&"), "&<AB&unknown;&");
    }

    #[test]
    fn reads_attributes() {
        assert_eq!(attribute("a class=x HREF='/y'", "href").as_deref(), Some("/y"));
        assert_eq!(attribute("a data-href=\"no\" href=z", "href").as_deref(), Some("z"));
        assert_eq!(attribute("a", "href"), None);
    }
}
