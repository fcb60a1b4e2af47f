//! Arbitrary text into address, domain and recipient-list parsing, and the HTML-to-text
//! rendering that turns untrusted HTML bodies into text parts.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for entry in edgemail::address::split_list(text) {
        if let Ok(address) = edgemail::address::parse(entry) {
            // A parsed address must survive a second parse unchanged.
            let again = format!("{}@{}", address.local, address.domain);
            assert!(edgemail::address::parse(&again).is_ok(), "{again:?} did not re-parse");
        }
    }
    let _ = edgemail::address::normalize_domain(text);
    let _ = edgemail::mail::text::html_to_text(text);
});
