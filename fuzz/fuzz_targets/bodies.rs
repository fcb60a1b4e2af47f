//! Arbitrary bytes into the parsing and validation of every request body type.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    edgemail::api::parse_every_body(data);
});
