//! Arbitrary bytes into the parsing and validation of a `POST /v1/send` body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = edgemail::api::send::parse(data, "example.com", 1_795_305_600_000);
});
