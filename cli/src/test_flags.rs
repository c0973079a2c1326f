//! A subcommand's flags parsed in its unit tests as `bijou` parses them.

use bijou_frame::signing::PeerId;

/// `argv` (the subcommand's name first) parsed into the subcommand's
/// flags.
pub fn parse<A: clap::Args + clap::FromArgMatches>(argv: &[&str]) -> Result<A, clap::Error> {
    let command = A::augment_args(clap::Command::new("bijou"));
    A::from_arg_matches(&command.try_get_matches_from(argv)?)
}

/// `bijou <subcommand> --seed 7 --timeout 30` and `extra`: a reproducible
/// run that cannot hang a test.
pub fn seeded<A: clap::Args + clap::FromArgMatches>(subcommand: &str, extra: &[&str]) -> A {
    let mut argv = vec![subcommand, "--seed", "7", "--timeout", "30"];
    argv.extend_from_slice(extra);
    parse(&argv).expect("valid flags")
}

/// Checks that `--server-id` after `argv` takes a peer id in 64 hex
/// digits and refuses anything else; `server_id` reads the parsed flag.
pub fn check_server_id_flag<A: clap::Args + clap::FromArgMatches>(
    argv: &[&str],
    server_id: impl Fn(A) -> Option<PeerId>,
) {
    let id = PeerId::from_bytes([0xAB; 32]);
    let with_id = |s: &str| {
        let mut argv = argv.to_vec();
        argv.extend(["--server-id", s]);
        parse::<A>(&argv)
    };
    assert_eq!(with_id(&id.to_string()).map(server_id).ok(), Some(Some(id)));
    assert!(with_id("abcd").is_err());
    assert!(with_id(&"zz".repeat(32)).is_err());
}
