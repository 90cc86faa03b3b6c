//! `baton-guard FD PROGRAM [ARGS…]`: the process guard baton starts each command and child
//! under (see `baton_process::guard`). It applies the command's sandbox, when baton hands it one,
//! to the program it starts, never to itself. Not meant to be run by hand.

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let code = baton_process::guard::main(&argv, baton_sandbox::guard_hook);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
