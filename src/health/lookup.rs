//! The DNS questions the health checks ask, behind a small trait so the SPF evaluator can be unit
//! tested against a table. Answers keep apart "there is nothing" (NXDOMAIN or NODATA: a definitive
//! answer that can fail a check) and "no answer" (timeout, SERVFAIL: only ever a warning).

use std::future::Future;
use std::net::IpAddr;

use hickory_resolver::proto::rr::{Name, RData, RecordType};

use crate::dns::Dns;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    Found(T),
    /// NXDOMAIN, or the name exists without records of the asked type.
    Nothing,
    /// No definitive answer; the text says why.
    Failed(String),
}

pub trait Resolve: Sync {
    /// TXT records, each one's character-strings joined (RFC 7208 3.3).
    fn txt(&self, name: &str) -> impl Future<Output = Answer<Vec<String>>> + Send;
    /// A records (`v6` false) or AAAA records (`v6` true).
    fn addrs(&self, name: &str, v6: bool) -> impl Future<Output = Answer<Vec<IpAddr>>> + Send;
    /// MX records as (preference, exchange without the trailing dot; "" for a null MX).
    fn mx(&self, name: &str) -> impl Future<Output = Answer<Vec<(u16, String)>>> + Send;
    /// PTR records of an address's reverse name, without the trailing dot.
    fn ptr(&self, ip: IpAddr) -> impl Future<Output = Answer<Vec<String>>> + Send;
}

impl Resolve for Dns {
    async fn txt(&self, name: &str) -> Answer<Vec<String>> {
        self.ask(name, RecordType::TXT, |data| match data {
            RData::TXT(txt) => {
                let bytes: Vec<u8> = txt.txt_data.iter().flat_map(|s| s.iter().copied()).collect();
                Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            _ => None,
        })
        .await
    }

    async fn addrs(&self, name: &str, v6: bool) -> Answer<Vec<IpAddr>> {
        let kind = if v6 { RecordType::AAAA } else { RecordType::A };
        self.ask(name, kind, |data| match data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .await
    }

    async fn mx(&self, name: &str) -> Answer<Vec<(u16, String)>> {
        self.ask(name, RecordType::MX, |data| match data {
            RData::MX(mx) => {
                Some((mx.preference, mx.exchange.to_ascii().trim_end_matches('.').to_owned()))
            }
            _ => None,
        })
        .await
    }

    async fn ptr(&self, ip: IpAddr) -> Answer<Vec<String>> {
        let reverse = Name::from(ip).to_ascii();
        self.ask(&reverse, RecordType::PTR, |data| match data {
            RData::PTR(name) => Some(name.0.to_ascii().trim_end_matches('.').to_owned()),
            _ => None,
        })
        .await
    }
}

impl Dns {
    async fn ask<T>(
        &self,
        name: &str,
        kind: RecordType,
        pick: impl Fn(&RData) -> Option<T>,
    ) -> Answer<Vec<T>> {
        let absolute = if name.ends_with('.') { name.to_owned() } else { format!("{name}.") };
        match self.resolver().lookup(absolute, kind).await {
            Ok(lookup) => {
                let found: Vec<T> = lookup.answers().iter().filter_map(|r| pick(&r.data)).collect();
                if found.is_empty() { Answer::Nothing } else { Answer::Found(found) }
            }
            Err(e) if e.is_nx_domain() || e.is_no_records_found() => Answer::Nothing,
            Err(e) => Answer::Failed(format!("{kind} lookup of {name} failed: {e}")),
        }
    }
}
