//! Arbitrary bytes into the IMAP command reader the server uses (imap-next's flow with the
//! server's options and BAD answers), split at a size taken from the input as a network would
//! deliver them; AUTHENTICATE and IDLE are answered so the flow goes on past them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, rest)) = data.split_first() else {
        return;
    };
    edgemail::imap::reader::read_commands(rest, usize::from(chunk) + 1);
});
