//! Arbitrary bytes as a received message: parsing, DSN and ARF reading, reply references.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = edgemail::inbound::inspect(data, 1_795_305_600_000);
});
