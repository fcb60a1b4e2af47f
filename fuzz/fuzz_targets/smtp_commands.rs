//! Arbitrary bytes into the inbound SMTP command reader, split at a size taken from the input,
//! as a network would deliver them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, rest)) = data.split_first() else {
        return;
    };
    let _ = edgemail::smtp::session::replies_to(rest, usize::from(chunk) + 1);
});
