//! The policy indicator: the TXT record at `_mta-sts.<domain>` (RFC 8461 section 3.1).

use hickory_resolver::proto::rr::RData;

use crate::dns::Dns;

/// The `id` of the domain's record; None when there is no single valid record, or no answer.
pub async fn id(dns: &Dns, domain: &str) -> Option<String> {
    let lookup = dns.resolver().txt_lookup(format!("_mta-sts.{domain}.")).await.ok()?;
    let records: Vec<Option<String>> = lookup
        .answers()
        .iter()
        .filter_map(|r| match &r.data {
            RData::TXT(txt) => {
                let bytes: Vec<u8> = txt.txt_data.iter().flat_map(|s| s.iter().copied()).collect();
                parse(&String::from_utf8_lossy(&bytes))
            }
            _ => None,
        })
        .collect();
    // Other records are skipped; more than one STSv1 record means none (section 3.1).
    match records.as_slice() {
        [one] => one.clone(),
        _ => None,
    }
}

/// None for a record that is not STSv1 (ignored); Some(None) for an STSv1 record without a
/// valid id (it counts, and makes the domain's indicator invalid).
fn parse(text: &str) -> Option<Option<String>> {
    let mut fields = text.split(';').map(str::trim);
    if fields.next() != Some("v=STSv1") {
        return None;
    }
    let id = fields.filter_map(|f| f.split_once('=')).find(|(k, _)| k.trim() == "id");
    Some(
        id.map(|(_, v)| v.trim())
            .filter(|v| (1..=32).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric()))
            .map(str::to_owned),
    )
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn records_give_their_id() {
        assert_eq!(parse("v=STSv1; id=20160831085700Z;"), Some(Some("20160831085700Z".into())));
        assert_eq!(parse("v=STSv1;id=abc ; ext=1"), Some(Some("abc".into())));
        assert_eq!(parse("v=spf1 -all"), None);
        assert_eq!(parse("v=STSv10; id=1"), None);
        assert_eq!(parse("v=STSv1"), Some(None));
        assert_eq!(parse("v=STSv1; id=not-alnum"), Some(None));
        assert_eq!(parse(&format!("v=STSv1; id={}", "a".repeat(33))), Some(None));
    }
}
