//! The `bitonic` command: `bitonic devices` lists what was found, `bitonic bench` sorts random
//! keys on every device and prints a table, `bitonic bench --compare` measures our sorts
//! against CUB, torch and the CPU (see `docs/bench.md`).

mod args;
mod common;
mod compare;
mod cub;
mod device_timing;
mod plot;
mod quick;
mod torch;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devices => {
            list_devices();
            Ok(())
        }
        Command::Bench(args) if args.compare => {
            compare::config(&args).and_then(|cfg| compare::run(&cfg))
        }
        Command::Bench(args) => quick::run(&quick::config(&args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("bitonic: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn list_devices() {
    for b in bitonic::devices() {
        match &b.unavailable {
            Some(why) => println!("{:<7} unavailable: {why}", b.backend),
            None if b.devices.is_empty() => println!("{:<7} no devices", b.backend),
            None => {
                for d in &b.devices {
                    println!("{d}");
                }
            }
        }
    }
}
