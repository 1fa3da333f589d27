//! The `husk` command.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = husk_cli::cli::Cli::parse();
    husk_cli::cli::init_tracing(cli.default_log_filter(), cli.log_json());
    match cli.run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(husk_cli::cli::EXIT_ERROR)
        }
    }
}
