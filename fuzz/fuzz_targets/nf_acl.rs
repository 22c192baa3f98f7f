//! Fuzz target `nf_acl`: frames from the input (see `pktvec_fuzz::Input`) through the
//! forwarder's real graph; no panic, conservation balanced, every buffer back in the pool,
//! and the transmitted frames exactly what the reference model says
//! (`pktvec_fuzz::targets::nf_acl`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pktvec_fuzz::targets::nf_acl(data));
