//! DMARC of received mail when the policy is published only at the organizational domain: a
//! subdomain's From falls back to `_dmarc.<org domain>`, and relaxed alignment compares
//! organizational domains.

use std::time::Duration;

use serde_json::Value;

use crate::mail_world::MailWorld;
use crate::smtp_client::Talk;

/// The Authentication-Results of the one message of `sales` (in its inbox, or in Junk where a
/// DMARC failure goes in these worlds), once it is stored.
fn stored_results(w: &MailWorld) -> String {
    for round in 0..200 {
        let folder = if round % 2 == 0 { "inbox" } else { "junk" };
        let list =
            w.api().get(&format!("/v1/emails?mailbox=sales&folder={folder}")).expect(200).json();
        if let Some(id) = list.as_array().and_then(|l| l.first()).and_then(|e| e["id"].as_str()) {
            let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
            let headers = email["headers"].as_array().cloned().unwrap_or_default();
            return headers
                .iter()
                .find(|h| h["name"] == "Authentication-Results")
                .and_then(|h: &Value| h["value"].as_str())
                .unwrap_or("")
                .to_owned();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing stored:\n{}", w.server.log());
}

/// A world where only `_dmarc.example.co.uk` publishes a policy (p=reject). The public suffix
/// `co.uk` publishes one too (p=none): a tree walk towards the root (mail-auth's DMARCbis draft)
/// would take it for the organizational domain of names that have none of their own.
/// Failures under `p=reject` are filed in Junk here (`inbound.dmarc_reject = "junk"`), so that
/// the results can be read; refusing them is tested in `inbound_protection.rs`.
fn world() -> MailWorld {
    let w = MailWorld::start_with(&[("EDGEMAIL_INBOUND_DMARC_REJECT", "junk")], &[]);
    w.dns.add_txt("_dmarc.example.co.uk", "v=DMARC1; p=reject");
    w.dns.add_txt("_dmarc.co.uk", "v=DMARC1; p=none");
    w.dns.add_txt("example.co.uk", "v=spf1 ip4:127.0.0.1 -all");
    w.dns.add_txt("bounce.example.co.uk", "v=spf1 ip4:127.0.0.1 -all");
    w.dns.add_txt("mail.example.co.uk", "v=spf1 -all");
    w.dns.add_txt("other.co.uk", "v=spf1 ip4:127.0.0.1 -all");
    w
}

fn deliver_from(w: &MailWorld, from: &str, mail_from: &str) {
    let message = format!(
        "From: Ann <{from}>\r\nTo: sales@alpha.test\r\n\
         Subject: hi\r\nMessage-ID: <d1@mail.example.co.uk>\r\n\r\nHello."
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mail.example.co.uk");
    assert!(s.mail(mail_from, &["sales@alpha.test"], &message).starts_with("250"));
}

fn deliver(w: &MailWorld, mail_from: &str) {
    deliver_from(w, "a@mail.example.co.uk", mail_from);
}

#[test]
fn a_failing_subdomain_gets_the_organizational_domains_reject_policy() {
    let w = world();
    deliver(&w, "a@mail.example.co.uk");
    let results = stored_results(&w);
    assert!(results.contains("dmarc=fail"), "{results}");
    let junk = w.api().get("/v1/emails?mailbox=sales&folder=junk").expect(200).json();
    assert_eq!(junk.as_array().map(Vec::len), Some(1), "a p=reject failure is in Junk: {junk}");
    assert!(results.contains("header.from=mail.example.co.uk"), "{results}");
    assert!(results.contains("policy.dmarc=reject"), "{results}");
    assert!(
        w.dns.queries().iter().any(|q| q.name.trim_end_matches('.') == "_dmarc.example.co.uk"),
        "the organizational domain's record was asked for"
    );
}

#[test]
fn a_subdomain_aligned_through_its_organizational_domain_passes() {
    let w = world();
    // SPF passes for bounce.example.co.uk; the From is its sibling mail.example.co.uk: relaxed
    // alignment holds because both have the organizational domain example.co.uk.
    deliver(&w, "b@bounce.example.co.uk");
    let results = stored_results(&w);
    assert!(results.contains("spf=pass"), "{results}");
    assert!(results.contains("dmarc=pass"), "{results}");
    assert!(results.contains("policy.dmarc=reject"), "{results}");
}

#[test]
fn a_multi_label_public_suffix_is_no_organizational_domain() {
    let w = world();
    // news.shop.co.uk publishes nothing, nor does shop.co.uk; co.uk's record is not theirs. SPF
    // passes for other.co.uk, another registrant under the same suffix: never aligned.
    deliver_from(&w, "a@news.shop.co.uk", "x@other.co.uk");
    let results = stored_results(&w);
    assert!(results.contains("spf=pass"), "{results}");
    assert!(results.contains("dmarc=none"), "{results}");
    assert!(results.contains("header.from=news.shop.co.uk"), "{results}");
    let asked: Vec<String> = w.dns.queries().into_iter().map(|q| q.name).collect();
    assert!(asked.iter().any(|n| n == "_dmarc.shop.co.uk"), "{asked:?}");
    assert!(!asked.iter().any(|n| n == "_dmarc.co.uk"), "the suffix is not asked: {asked:?}");
}
