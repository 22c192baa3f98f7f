//! Being written.

use crate::sitting::Common;

/// Options of this subcommand.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
}

/// Runs the measurement.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let _ = args.common;
    Err("not written yet".into())
}
