//! Campaign tracking: HMAC-signed tokens for the open pixel, click redirects and unsubscribe
//! links, and the HTML rewriting that puts them into a message. A token carries its data (message
//! id, target URL or recipient) and a SHA-256 HMAC under a per-installation secret, so it cannot be
//! forged, altered or enumerated, and the redirect only ever follows links we signed.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::hmac;

use crate::mail::text::attribute;
use crate::store::TrackingOptions;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Open,
    Click,
    Unsubscribe,
}

impl Kind {
    fn tag(self) -> u8 {
        match self {
            Kind::Open => b'o',
            Kind::Click => b'c',
            Kind::Unsubscribe => b'u',
        }
    }
}

#[derive(Clone)]
pub struct Tokens {
    key: hmac::Key,
}

impl Tokens {
    pub fn new(secret: &[u8]) -> Tokens {
        Tokens { key: hmac::Key::new(hmac::HMAC_SHA256, secret) }
    }

    /// A key for another use of the server's secret (`label` names the use), so that a value
    /// made for one use never verifies for another.
    pub fn derived_key(&self, label: &str) -> hmac::Key {
        hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(&self.key, label.as_bytes()).as_ref())
    }

    /// A token for `kind` over `fields` (message id first).
    pub fn make(&self, kind: Kind, fields: &[&str]) -> String {
        let mut payload = vec![kind.tag()];
        payload.extend_from_slice(fields.join("\n").as_bytes());
        let tag = hmac::sign(&self.key, &payload);
        format!("{}.{}", B64.encode(&payload[1..]), B64.encode(tag.as_ref()))
    }

    /// The fields of a genuine token of `kind`; `None` for anything forged or malformed.
    pub fn open(&self, kind: Kind, token: &str) -> Option<Vec<String>> {
        let (data, tag) = token.rsplit_once('.')?;
        let data = B64.decode(data).ok()?;
        let tag = B64.decode(tag).ok()?;
        let mut payload = vec![kind.tag()];
        payload.extend_from_slice(&data);
        hmac::verify(&self.key, &payload, &tag).ok()?;
        let text = String::from_utf8(data).ok()?;
        Some(text.split('\n').map(str::to_owned).collect())
    }
}

/// Hex digits of the tag in a VERP bounce address: 64 bits, so guessing one takes 2^63 tries.
const BOUNCE_TAG_HEX: usize = 16;

impl Tokens {
    /// The envelope sender for recipient number `n` of message `id` from `domain`:
    /// `bounces+<id>.<n>-<tag>@<domain>`. The tag is an HMAC over all three, so a DSN sent to an
    /// address we never used (another id, another recipient, another hosted domain, an edited
    /// tag) is recognised as forged, and a recipient who sees its own bounce address cannot
    /// bounce the message's other recipients with it.
    pub fn bounce_address(&self, id: &str, n: usize, domain: &str) -> String {
        let name = format!("{id}.{n}");
        format!("bounces+{name}-{}@{domain}", self.bounce_tag(&name, domain))
    }

    /// The message id and recipient number of a genuine bounce address local part (`bounces+`
    /// already removed) on `domain`; `None` when the tag does not verify.
    pub fn bounce_id(&self, local: &str, domain: &str) -> Option<(String, usize)> {
        let (name, tag) = local.rsplit_once('-')?;
        let name = name.to_ascii_lowercase();
        let (id, n) = name.rsplit_once('.')?;
        let n: usize = n.parse().ok()?;
        let expected = self.bounce_tag(&name, domain);
        // Compared without an early exit, so timing does not reveal how much of a guess is right.
        let tag = tag.to_ascii_lowercase();
        let differs = tag.len() != expected.len()
            || tag.bytes().zip(expected.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) != 0;
        (!differs).then(|| (id.to_owned(), n))
    }

    fn bounce_tag(&self, id: &str, domain: &str) -> String {
        let payload = format!("v{id}@{}", domain.to_ascii_lowercase());
        let tag = hmac::sign(&self.key, payload.as_bytes());
        let mut hex = crate::store::encode_hex(tag.as_ref());
        hex.truncate(BOUNCE_TAG_HEX);
        hex
    }
}

/// Links of one message: where the tracking endpoints live and the message they belong to.
pub struct Links<'a> {
    pub base_url: &'a str,
    pub tokens: &'a Tokens,
    pub email_id: &'a str,
    pub recipient: &'a str,
}

impl Links<'_> {
    pub fn unsubscribe_url(&self) -> String {
        let token = self.tokens.make(Kind::Unsubscribe, &[self.email_id, self.recipient]);
        format!("{}/t/u/{token}", self.base_url)
    }

    fn click_url(&self, target: &str) -> String {
        let token = self.tokens.make(Kind::Click, &[self.email_id, target]);
        format!("{}/t/c/{token}", self.base_url)
    }

    fn pixel_url(&self) -> String {
        let token = self.tokens.make(Kind::Open, &[self.email_id]);
        format!("{}/t/o/{token}", self.base_url)
    }

    /// The HTML with http(s) links routed through the click redirect, an unsubscribe footer and
    /// the open pixel added before `</body>` (or at the end): every part on.
    #[cfg(test)]
    pub fn rewrite_html(&self, html: &str) -> String {
        self.rewrite_html_with(html, &TrackingOptions::default())
    }

    /// `rewrite_html` with only the parts `tracking` keeps on: links, footer, pixel.
    pub fn rewrite_html_with(&self, html: &str, tracking: &TrackingOptions) -> String {
        if !tracking.clicks {
            return self.finish_html(html.to_owned(), tracking);
        }
        let mut out = String::with_capacity(html.len() + 512);
        let mut rest = html;
        while let Some(lt) = rest.find('<') {
            out.push_str(&rest[..lt]);
            rest = &rest[lt..];
            let end = rest.find('>').map_or(rest.len(), |g| g + 1);
            let tag = &rest[..end];
            rest = &rest[end..];
            let is_anchor = tag.len() > 2 && tag[1..].to_ascii_lowercase().starts_with("a ");
            match attribute(tag, "href").filter(|h| is_anchor && is_trackable(h)) {
                Some(target) => out.push_str(&self.replace_href(tag, &target)),
                None => out.push_str(tag),
            }
        }
        out.push_str(rest);
        self.finish_html(out, tracking)
    }

    /// The footer and the pixel, each when `tracking` keeps it, before `</body>` or at the end.
    fn finish_html(&self, mut out: String, tracking: &TrackingOptions) -> String {
        let mut footer = String::new();
        if tracking.unsubscribe_footer {
            footer.push_str(&format!(
                "<p style=\"font-size:12px;color:#777777\">Don't want these emails? \
                 <a href=\"{}\">Unsubscribe</a>.</p>",
                html_escape(&self.unsubscribe_url()),
            ));
        }
        if tracking.opens {
            footer.push_str(&format!(
                "<img src=\"{}\" width=\"1\" height=\"1\" alt=\"\" \
                 style=\"display:block;border:0\">",
                html_escape(&self.pixel_url()),
            ));
        }
        match out.to_ascii_lowercase().rfind("</body>") {
            Some(at) => out.insert_str(at, &footer),
            None => out.push_str(&footer),
        }
        out
    }

    /// The text part with an unsubscribe line at the end.
    pub fn text_footer(&self, text: &str) -> String {
        format!("{text}\n\n--\nUnsubscribe: {}\n", self.unsubscribe_url())
    }

    fn replace_href(&self, tag: &str, target: &str) -> String {
        let lower = tag.to_ascii_lowercase();
        let Some(at) = lower.find("href") else {
            return tag.to_owned();
        };
        let after = &tag[at + 4..];
        let Some(eq) = after.find('=') else {
            return tag.to_owned();
        };
        let value = after[eq + 1..].trim_start();
        let value_start = tag.len() - value.len();
        let value_end = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].find(q).map_or(tag.len(), |e| value_start + e + 2),
            _ => value
                .find(|c: char| c.is_ascii_whitespace() || c == '>')
                .map_or(tag.len(), |e| value_start + e),
        };
        format!(
            "{}\"{}\"{}",
            &tag[..value_start],
            html_escape(&self.click_url(target)),
            &tag[value_end..]
        )
    }
}

fn is_trackable(href: &str) -> bool {
    let lower = href.trim().to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://")) && !lower.contains("/t/u/")
}

pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A 1x1 transparent GIF.
pub const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounce_addresses_verify_only_for_their_id_recipient_and_domain() {
        let tokens = Tokens::new(b"secret");
        let address = tokens.bounce_address("em_01abc", 1, "alpha.test");
        let local = address.strip_prefix("bounces+").and_then(|a| a.strip_suffix("@alpha.test"));
        let local = local.expect("shape"); // ok: test
        let genuine = Some(("em_01abc".to_owned(), 1));
        assert_eq!(tokens.bounce_id(local, "alpha.test"), genuine);
        assert_eq!(tokens.bounce_id(&local.to_ascii_uppercase(), "ALPHA.test"), genuine);
        assert_eq!(tokens.bounce_id(local, "beta.test"), None, "another hosted domain");
        let other = local.replacen("em_01abc", "em_01abd", 1);
        assert_eq!(tokens.bounce_id(&other, "alpha.test"), None, "another id, same tag");
        let other = local.replacen(".1-", ".0-", 1);
        assert_eq!(tokens.bounce_id(&other, "alpha.test"), None, "another recipient, same tag");
        assert_eq!(tokens.bounce_id("em_01abc.1", "alpha.test"), None, "no tag");
        assert_eq!(Tokens::new(b"other").bounce_id(local, "alpha.test"), None);
    }

    #[test]
    fn tokens_round_trip_and_resist_forgery() {
        let t = Tokens::new(b"secret");
        let token = t.make(Kind::Click, &["em_1", "https://example.com/?a=1"]);
        assert_eq!(
            t.open(Kind::Click, &token),
            Some(vec!["em_1".into(), "https://example.com/?a=1".into()])
        );
        assert_eq!(t.open(Kind::Open, &token), None, "a token is bound to its kind");
        assert_eq!(Tokens::new(b"other").open(Kind::Click, &token), None);
        let (data, tag) = token.rsplit_once('.').expect("dot"); // ok: test
        let forged = format!("{}.{tag}", B64.encode("em_1\nhttps://evil.example"));
        assert_eq!(t.open(Kind::Click, &forged), None);
        assert_eq!(t.open(Kind::Click, data), None);
        assert_eq!(t.open(Kind::Click, "garbage"), None);
    }

    #[test]
    fn switched_off_parts_are_left_out() {
        let t = Tokens::new(b"k");
        let links = Links {
            base_url: "https://m.test",
            tokens: &t,
            email_id: "em_1",
            recipient: "a@b.com",
        };
        let html = "<body><a href=\"https://shop.test/\">shop</a></body>";
        let off = TrackingOptions { opens: false, clicks: false, unsubscribe_footer: false };
        assert_eq!(links.rewrite_html_with(html, &off), html, "nothing added or rewritten");
        let pixel_only = TrackingOptions { opens: true, ..off };
        let out = links.rewrite_html_with(html, &pixel_only);
        assert!(out.contains("/t/o/") && out.contains("https://shop.test/"), "{out}");
        assert!(!out.contains("/t/c/") && !out.contains("/t/u/"), "{out}");
        let links_only = TrackingOptions { clicks: true, ..off };
        let out = links.rewrite_html_with(html, &links_only);
        assert!(out.contains("/t/c/") && !out.contains("/t/o/") && !out.contains("/t/u/"), "{out}");
        let footer_only = TrackingOptions { unsubscribe_footer: true, ..off };
        let out = links.rewrite_html_with(html, &footer_only);
        assert!(out.contains("/t/u/") && !out.contains("/t/o/") && !out.contains("/t/c/"), "{out}");
    }

    #[test]
    fn rewrites_links_and_adds_pixel_and_footer() {
        let t = Tokens::new(b"k");
        let links = Links {
            base_url: "https://m.test",
            tokens: &t,
            email_id: "em_1",
            recipient: "a@b.com",
        };
        let html = "<html><body><p>Hi <a class='x' href=\"https://shop.test/p?x=1&amp;y=2\">shop</a> \
                    <A HREF='mailto:x@y.z'>mail</A> <a href=#top>top</a></p></body></html>";
        let out = links.rewrite_html(html);
        assert!(out.contains("<a class='x' href=\"https://m.test/t/c/"), "{out}");
        assert!(!out.contains("shop.test"), "the target is inside the token: {out}");
        assert!(out.contains("<A HREF='mailto:x@y.z'>"));
        assert!(out.contains("<a href=#top>"));
        let body_end = out.find("</body>").expect("body"); // ok: test
        let pixel = out.find("/t/o/").expect("pixel"); // ok: test
        assert!(pixel < body_end);
        let click = out.split("/t/c/").nth(1).and_then(|s| s.split('"').next()).expect("token"); // ok: test
        let fields = t.open(Kind::Click, &click.replace("&amp;", "&")).expect("genuine"); // ok: test
        assert_eq!(fields[1], "https://shop.test/p?x=1&y=2");
    }
}
