//! The built `bijou` binary, run as a user runs it: outputs, exit codes,
//! and one clear line on stderr for every kind of bad input.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIJOU: &str = env!("CARGO_BIN_EXE_bijou");

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bijou-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn bijou(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIJOU)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("bijou runs")
}

fn bijou_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(BIJOU)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bijou runs");
    let mut stdin = child.stdin.take().expect("stdin");
    // A reader that stops early is fine: ignore a broken pipe.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().expect("bijou ends")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Exit code, stdout, stderr.
fn run(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// Exactly one line on stderr, starting `error: `, containing `what`.
fn one_error_line(stderr: &str, what: &str) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(lines[0].contains(what), "{what:?} not in {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn keygen(dir: &Path, name: &str) -> String {
    let (code, out, err) = run(&bijou(dir, &["keygen", "--out", name]));
    assert_eq!(code, 0, "{err}");
    let id = out.trim().to_owned();
    assert_eq!(id.len(), 64, "{out}");
    id
}

#[test]
fn keygen_writes_a_key_file_and_never_overwrites_one() {
    let dir = scratch("keygen");
    let id = keygen(&dir, "me.key");
    let key = std::fs::read_to_string(dir.join("me.key")).expect("key file");
    // Labelled: the secret seed, and the public id beside it (stdout's).
    let lines: Vec<&str> = key.lines().collect();
    assert_eq!(lines.len(), 3, "{key}");
    assert_eq!(lines[0], "bijou-secret-key v1");
    assert!(
        lines[1].starts_with("seed ") && lines[1].len() == 5 + 64,
        "{key}"
    );
    assert_eq!(lines[2], format!("peer-id {id}"));
    assert_ne!(&lines[1][5..], id, "the seed is not the public id");
    // --bare-hex: the seed alone, as subduction_cli reads it.
    let (code, out, err) = run(&bijou(&dir, &["keygen", "--out", "bare.key", "--bare-hex"]));
    assert_eq!(code, 0, "{err}");
    let bare = std::fs::read_to_string(dir.join("bare.key")).expect("key file");
    assert_eq!(bare.len(), 65);
    assert!(bare.trim().chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(bare.trim(), out.trim());
    let (code, _, err) = run(&bijou(&dir, &["keygen", "--out", "me.key"]));
    assert_eq!(code, 2);
    one_error_line(&err, "never overwrites");
    assert_eq!(std::fs::read_to_string(dir.join("me.key")).ok(), Some(key));
}

#[test]
fn a_signed_file_verifies_and_names_its_signer_and_digest() {
    let dir = scratch("sign");
    let id = keygen(&dir, "me.key");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("data.bin"), &data).expect("write");
    let (code, out, err) = run(&bijou(
        &dir,
        &["blob", "sign", "data.bin", "--key", "me.key"],
    ));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("signature in data.bin.sig"), "{out}");
    let digest = blake3::hash(&data).to_hex().to_string();
    let (code, out, err) = run(&bijou(&dir, &["blob", "verify", "data.bin"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("OK data.bin: signed by "), "{out}");
    assert!(
        out.contains(&id) && out.contains(&digest) && out.contains("300000 B"),
        "{out}"
    );
    // --signer with the right id passes; stdin gives the same answer.
    let (code, _, err) = run(&bijou(
        &dir,
        &["blob", "verify", "data.bin", "--signer", &id],
    ));
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&bijou_stdin(
        &dir,
        &["blob", "verify", "-", "data.bin.sig"],
        &data,
    ));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&digest), "{out}");
    // Signing from stdin needs --out, and gives the same signature bytes.
    let (code, _, err) = run(&bijou_stdin(
        &dir,
        &["blob", "sign", "-", "--key", "me.key"],
        &data,
    ));
    assert_eq!(code, 2);
    one_error_line(&err, "--out");
    let args = ["blob", "sign", "-", "--key", "me.key", "--out", "stdin.sig"];
    let (code, _, err) = run(&bijou_stdin(&dir, &args, &data));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(dir.join("stdin.sig")).ok(),
        std::fs::read(dir.join("data.bin.sig")).ok(),
        "one statement, one encoding"
    );
}

#[test]
fn any_changed_byte_of_file_or_signature_fails_with_a_reason() {
    let dir = scratch("tamper");
    keygen(&dir, "me.key");
    std::fs::write(dir.join("f"), b"the quick brown fox").expect("write");
    let (code, _, err) = run(&bijou(&dir, &["blob", "sign", "f", "--key", "me.key"]));
    assert_eq!(code, 0, "{err}");
    let sig = std::fs::read(dir.join("f.sig")).expect("sig");
    assert_eq!(sig.len(), 4 + 32 + 32 + 1 + 64);

    // The file: a changed byte is a digest mismatch, a longer file a size one.
    std::fs::write(dir.join("f"), b"the quick brown fix").expect("write");
    let (code, _, err) = run(&bijou(&dir, &["blob", "verify", "f"]));
    assert_eq!(code, 1);
    one_error_line(&err, "f changed after it was signed by");
    assert!(err.contains("blob digest is"), "{err}");
    // Friction: another file's signature, named on purpose, was reported as
    // this file having changed.
    std::fs::write(dir.join("g"), b"another file").expect("write");
    let (code, _, err) = run(&bijou(&dir, &["blob", "verify", "g", "f.sig"]));
    assert_eq!(code, 1);
    one_error_line(&err, "f.sig was made by ");
    assert!(
        err.ends_with("for another file, or g changed after it was signed\n"),
        "{err}"
    );
    // Stdin closed early: a truncated file.
    let (code, _, err) = run(&bijou_stdin(
        &dir,
        &["blob", "verify", "-", "f.sig"],
        b"the quick",
    ));
    assert_eq!(code, 1);
    one_error_line(&err, "blob is 9 bytes, expected 19");
    std::fs::write(dir.join("f"), b"the quick brown fox").expect("write");

    // Every single-bit flip of the signature file fails, as malformed (2)
    // or as not verifying (1), never silently.
    for bit in 0..sig.len() * 8 {
        let mut flipped = sig.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        std::fs::write(dir.join("f.sig"), &flipped).expect("write");
        let (code, _, err) = run(&bijou(&dir, &["blob", "verify", "f"]));
        assert!(code == 1 || code == 2, "bit {bit}: exit {code}: {err}");
        assert_eq!(err.lines().count(), 1, "bit {bit}: {err}");
    }
    // Truncated and extended signature files are malformed input.
    for bad in [&sig[..sig.len() - 1], &sig[..10], &[][..]] {
        std::fs::write(dir.join("f.sig"), bad).expect("write");
        let (code, _, err) = run(&bijou(&dir, &["blob", "verify", "f"]));
        assert_eq!(code, 2, "{err}");
        one_error_line(&err, "is not a valid signature file");
    }
    let mut longer = sig.clone();
    longer.push(0);
    std::fs::write(dir.join("f.sig"), &longer).expect("write");
    let (code, _, err) = run(&bijou(&dir, &["blob", "verify", "f"]));
    assert_eq!(code, 2);
    one_error_line(&err, "is not a valid signature file");
    std::fs::write(dir.join("f.sig"), vec![0u8; 10_000]).expect("write");
    let (code, _, err) = run(&bijou(&dir, &["blob", "verify", "f"]));
    assert_eq!(code, 2);
    one_error_line(&err, "longer than");
}

#[test]
fn another_signer_is_named_when_one_is_required() {
    let dir = scratch("signer");
    let mine = keygen(&dir, "me.key");
    let theirs = keygen(&dir, "them.key");
    std::fs::write(dir.join("f"), b"x").expect("write");
    let (code, _, err) = run(&bijou(&dir, &["blob", "sign", "f", "--key", "them.key"]));
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&bijou(&dir, &["blob", "verify", "f", "--signer", &mine]));
    assert_eq!(code, 1);
    one_error_line(
        &err,
        &format!("is signed by {theirs}, not by the required --signer {mine}"),
    );
}

#[test]
fn bad_files_and_keys_get_one_line_and_exit_2() {
    let dir = scratch("badinput");
    keygen(&dir, "me.key");
    std::fs::write(dir.join("f"), b"x").expect("write");
    std::fs::create_dir_all(dir.join("d")).expect("dir");
    std::fs::write(dir.join("short.key"), "abcd\n").expect("write");
    std::fs::write(dir.join("nothex.key"), "zz".repeat(32)).expect("write");
    std::fs::write(dir.join("empty"), b"").expect("write");
    std::fs::write(dir.join("binary.key"), [0xFFu8; 64]).expect("write");
    let cases: [(&[&str], &str); 8] = [
        (
            &["blob", "sign", "missing", "--key", "me.key"],
            "cannot read missing",
        ),
        (&["blob", "sign", "d", "--key", "me.key"], "is a directory"),
        (
            &["blob", "sign", "f", "--key", "short.key"],
            "64 hex digits",
        ),
        (
            &["blob", "sign", "f", "--key", "nothex.key"],
            "64 hex digits",
        ),
        // Friction: a missing key file did not say how to make one.
        (
            &["blob", "sign", "f", "--key", "missing.key"],
            "make a key with `bijou keygen --out missing.key`",
        ),
        // Friction: a binary key file said "stream did not contain valid
        // UTF-8"; now what it is not, and what a key file is.
        (
            &["blob", "sign", "f", "--key", "binary.key"],
            "key file binary.key holds no key: it is not text. A key file is what `bijou keygen --out FILE` writes",
        ),
        (&["blob", "verify", "f"], "cannot read f.sig"),
        (&["blob", "verify", "missing"], "cannot read missing"),
    ];
    for (args, what) in cases {
        let (code, _, err) = run(&bijou(&dir, args));
        assert_eq!(code, 2, "{args:?}: {err}");
        one_error_line(&err, what);
    }
    // An empty file is a file: signed and verified like any other.
    let (code, _, err) = run(&bijou(&dir, &["blob", "sign", "empty", "--key", "me.key"]));
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&bijou(&dir, &["blob", "verify", "empty"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(", 0 B"), "{out}");
}

#[test]
fn every_subcommand_has_its_own_help_with_an_example() {
    let dir = scratch("help");
    for (sub, says) in [
        (&["keygen"][..], "Make a new signing key"),
        (&["blob", "sign"][..], "Sign a file"),
        (
            &["blob", "verify"][..],
            "Verify a file against its signature",
        ),
        (&["inspect"][..], "Decode and check a capture"),
        (&["serve"][..], "keeps nothing across restarts"),
        (&["sync"][..], "Push signed commits"),
        (&["echo"][..], "Echo signed commits"),
        (&["load"][..], "Hold a crowd of authenticated connections"),
    ] {
        let mut args = sub.to_vec();
        args.push("--help");
        let (code, out, err) = run(&bijou(&dir, &args));
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(says), "{sub:?}: {out}");
        assert!(out.contains("Example:"), "{sub:?}: {out}");
        assert!(out.contains("Exit codes"), "{sub:?}: {out}");
    }
}

#[test]
fn zero_counts_and_windows_are_refused_with_a_range_error() {
    let dir = scratch("ranges");
    for args in [
        &["echo", "--peers", "0"][..],
        &["echo", "--window", "0"][..],
        &["echo", "--count", "0"][..],
        &["sync", "--count", "0"][..],
        &["sync", "--window", "0"][..],
    ] {
        let (code, _, err) = run(&bijou(&dir, args));
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains("not in 1.."), "{args:?}: {err}");
    }
}

#[test]
fn inspect_detects_the_prefix_and_hex_and_hints_when_forced_wrong() {
    let dir = scratch("inspect");
    // A capture with the LEB128 prefix, from the echo load test.
    let (code, _, err) = run(&bijou(
        &dir,
        &[
            "echo",
            "--count",
            "2",
            "--blob-size",
            "100",
            "--prefix",
            "leb128",
            "--capture",
            "c.cap",
        ],
    ));
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&bijou(&dir, &["inspect", "c.cap"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(leb128, 158 bytes)"), "{out}");
    assert!(
        out.ends_with("3 frame(s), 3 ok, 0 with problems\n"),
        "{out}"
    );
    let hex: String = std::fs::read(dir.join("c.cap"))
        .expect("capture")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let (code, out, err) = run(&bijou_stdin(&dir, &["inspect"], hex.as_bytes()));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("3 ok"), "{out}");
    // Forced to the wrong prefix: the report fails, and stderr says what to try.
    let (code, out, err) = run(&bijou(&dir, &["inspect", "c.cap", "--prefix", "u32-be"]));
    assert_ne!(code, 0);
    assert!(!out.contains("hint"), "hints go to stderr: {out}");
    assert!(err.contains("try --prefix leb128"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Starts a server (`bijou serve`, `bijou echo --listen`); returns it and
/// the first line it printed.
fn server(dir: &Path, args: &[&str]) -> (Child, String) {
    let mut child = Command::new(BIJOU)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server runs");
    let mut first = String::new();
    let mut log = BufReader::new(child.stdout.take().expect("stdout"));
    log.read_line(&mut first).expect("a first line");
    // Keep reading the log, as a terminal would.
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    (child, first)
}

/// Starts `bijou serve` on an ephemeral port; returns it, its address and
/// its peer id (from its first line).
fn serve(dir: &Path) -> (Child, String, String) {
    let (child, first) = server(dir, &["serve", "--listen", "127.0.0.1:0"]);
    // "sync server S <id> listening on WebSocket ws://127.0.0.1:PORT/; ..."
    let id = first
        .split_whitespace()
        .nth(3)
        .unwrap_or_default()
        .to_owned();
    let addr = first
        .split("ws://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default()
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:") && id.len() == 64, "{first}");
    (child, addr, id)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sync_against_serve_and_the_audience_hint() {
    let dir = scratch("sync");
    let (child, addr, id) = serve(&dir);
    let _server = Killed(child);
    let started = Instant::now();
    let url = format!("ws://{addr}");
    let (code, out, err) = run(&bijou(&dir, &["sync", "--connect", &url, "--count", "20"]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("20/20 commits back, byte for byte"), "{out}");
    // The same with the server pinned by its id, and with `localhost`.
    let local = addr.replace("127.0.0.1", "localhost");
    let (code, out, err) = run(&bijou(
        &dir,
        &[
            "sync",
            "--connect",
            &local,
            "--count",
            "5",
            "--server-id",
            &id,
        ],
    ));
    assert_eq!(code, 0, "{out}{err}");
    // `localhost:PORT` is not the service name the server answers to.
    let (code, _, err) = run(&bijou(&dir, &["sync", "--connect", &local, "--count", "5"]));
    assert_eq!(code, 3);
    one_error_line(&err, "InvalidAudience");
    assert!(
        err.contains(&format!("we addressed the service name \"{local}\"")),
        "{err}"
    );
    assert!(err.contains("--service-name"), "{err}");
    // The command's flags, not the library's API names.
    assert!(!err.contains("Audience::"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn echo_at_a_sync_server_says_it_is_not_an_echo_server() {
    let dir = scratch("notecho");
    let (child, addr, id) = serve(&dir);
    let _server = Killed(child);
    let url = format!("ws://{addr}");
    let (code, out, err) = run(&bijou(
        &dir,
        &[
            "echo",
            "--connect",
            &url,
            "--server-id",
            &id,
            "--count",
            "10",
            "--timeout",
            "20",
        ],
    ));
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("not an echo server"), "{out}");
    assert!(!out.contains("altered 10"), "{out}");
    assert!(
        !out.contains("MB each way"),
        "no bytes figure for nothing echoed: {out}"
    );
    one_error_line(&err, "not an echo server");
}

/// A port nobody listens on: bind one, then free it.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a port")
}

#[test]
fn echo_that_cannot_connect_reports_no_lost_frames() {
    let dir = scratch("refused");
    let port = free_port();
    let target = format!("localhost:{port}");
    let (code, out, err) = run(&bijou(
        &dir,
        &["echo", "--connect", &target, "--count", "1000"],
    ));
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        !out.contains("lost"),
        "frames never sent are not lost: {out}"
    );
    one_error_line(&err, &format!("cannot connect to {target}"));
}

#[test]
fn an_address_in_use_is_named() {
    let dir = scratch("inuse");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    for args in [["serve", "--listen", &addr], ["echo", "--listen", &addr]] {
        let (code, _, err) = run(&bijou(&dir, &args));
        assert_eq!(code, 2, "{args:?}: {err}");
        one_error_line(&err, &format!("cannot listen on {addr}"));
    }
}

#[cfg(feature = "iroh")]
#[test]
fn echo_and_sync_run_over_iroh() {
    let dir = scratch("iroh");
    for args in [
        &[
            "echo",
            "--transport",
            "iroh",
            "--count",
            "50",
            "--blob-size",
            "200",
        ][..],
        &["sync", "--transport", "iroh", "--count", "20"][..],
    ] {
        let (code, out, err) = run(&bijou(&dir, args));
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert!(out.contains("iroh"), "{out}");
        assert!(out.trim_end().ends_with("OK"), "{out}");
    }
    // A malformed iroh address says what form is expected.
    let (code, _, err) = run(&bijou(&dir, &["sync", "--connect", "abcd@127.0.0.1:1"]));
    assert_eq!(code, 2);
    one_error_line(&err, "NODE_ID@IP:PORT");
}

#[cfg(not(feature = "iroh"))]
#[test]
fn iroh_without_the_feature_says_how_to_get_it() {
    let dir = scratch("noiroh");
    for args in [
        &["sync", "--transport", "iroh"][..],
        &["echo", "--transport", "iroh"][..],
        &["sync", "--connect", "abcd@127.0.0.1:1"][..],
    ] {
        let (code, _, err) = run(&bijou(&dir, args));
        assert_eq!(code, 2, "{args:?}: {err}");
        one_error_line(&err, "--features iroh");
    }
}

#[test]
fn an_echo_refused_by_audience_says_what_it_addressed() {
    let dir = scratch("echoaudience");
    let (child, addr, _) = serve(&dir);
    let _server = Killed(child);
    let url = format!("ws://{addr}");
    let (code, _, err) = run(&bijou(&dir, &["echo", "--connect", &url, "--count", "1"]));
    assert_eq!(code, 3, "{err}");
    one_error_line(&err, "we addressed the echo discovery id");
    assert!(err.contains("--server-id"), "{err}");
    // Friction: the hint named --service-name, which echo does not have,
    // and the library's API names.
    assert!(!err.contains("--service-name"), "{err}");
    assert!(!err.contains("Audience::"), "{err}");
}

/// Friction: a client on another length prefix than the server's was told
/// the server might be a WebSocket server; only the server's log named the
/// prefix. The client now names the prefixes to try.
#[test]
fn an_echo_on_another_prefix_is_told_which_prefixes_to_try() {
    let dir = scratch("echoprefix");
    let (child, first) = server(&dir, &["echo", "--listen", "127.0.0.1:0"]);
    let _server = Killed(child);
    // "echo server B <id> listening on 127.0.0.1:PORT (prefix bijou64); ..."
    let addr = first
        .split_whitespace()
        .find(|word| word.starts_with("127.0.0.1:"))
        .unwrap_or_default()
        .to_owned();
    assert!(first.contains("(prefix bijou64)"), "{first}");
    let (code, _, err) = run(&bijou(
        &dir,
        &[
            "echo",
            "--connect",
            &addr,
            "--prefix",
            "leb128",
            "--count",
            "1",
        ],
    ));
    assert_eq!(code, 3, "{err}");
    one_error_line(&err, "we framed with --prefix leb128");
    assert!(
        err.contains("try --prefix bijou64 or --prefix u32-be"),
        "{err}"
    );
}

/// `bijou blob --help` and the README give the signature file's size as the
/// code has it (`BlobStatement::MIN_SIGNED_LEN..=MAX_SIGNED_LEN`).
#[test]
fn the_stated_signature_file_size_is_the_codes() {
    use bijou_frame::signing::BlobStatement;
    let (min, max) = (BlobStatement::MIN_SIGNED_LEN, BlobStatement::MAX_SIGNED_LEN);
    let dir = scratch("blob-help");
    let (code, out, err) = run(&bijou(&dir, &["blob", "--help"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("{min} to {max} bytes")), "{out}");
    let readme = include_str!("../../README.md");
    assert!(readme.contains(&format!("{min}-{max} bytes")));
}

/// Friction: `--count` far beyond what a run can finish reserved memory
/// for every frame up front and aborted (exit 134); a timeout said nothing
/// of how far the run got.
#[test]
fn a_count_beyond_the_timeout_times_out_and_says_how_far_it_got() {
    let dir = scratch("hugecount");
    let (code, out, err) = run(&bijou(
        &dir,
        &["echo", "--count", "1000000000000", "--timeout", "1"],
    ));
    assert_eq!(code, 3, "{out}{err}");
    one_error_line(&err, "timed out after 1s (--timeout) with ");
    assert!(
        err.contains(" of 1000000000000 frames echoed; raise --timeout or lower --count"),
        "{err}"
    );
}

/// Friction: `cargo install --path cli` without `--locked` re-resolved
/// every dependency. Every install command the project shows is locked.
#[test]
fn every_install_command_shown_is_locked() {
    let shown = [
        ("README.md", include_str!("../../README.md")),
        ("cli/src/main.rs", include_str!("../src/main.rs")),
        ("cli/src/target.rs", include_str!("../src/target.rs")),
    ];
    let mut seen = 0;
    for (file, text) in shown {
        for line in text.lines().filter(|l| l.contains("cargo install --path")) {
            assert!(line.contains("--locked"), "{file}: {line}");
            seen += 1;
        }
    }
    assert!(seen >= 4, "the install commands were found ({seen})");
}

/// Long-poll end to end: `bijou serve --transport longpoll` and `bijou
/// sync --connect http://...`, and echo and sync each in one process.
#[test]
fn echo_and_sync_run_over_long_poll() {
    let dir = scratch("longpoll");
    let (child, first) = server(
        &dir,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--transport",
            "longpoll",
        ],
    );
    let _server = Killed(child);
    // "sync server S <id> listening on long-poll http://127.0.0.1:PORT; ..."
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .map(|url| url.trim_end_matches([';', ',']).to_owned())
        .unwrap_or_default();
    assert!(url.starts_with("http://127.0.0.1:"), "{first}");
    let (code, out, err) = run(&bijou(&dir, &["sync", "--connect", &url, "--count", "10"]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("over long-poll http://"), "{out}");
    assert!(out.contains("10/10 commits back, byte for byte"), "{out}");
    for args in [
        &["echo", "--transport", "longpoll", "--count", "30"][..],
        &["sync", "--transport", "longpoll", "--count", "10"][..],
    ] {
        let (code, out, err) = run(&bijou(&dir, args));
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert!(out.trim_end().ends_with("OK"), "{out}");
    }
    // https:// is refused with what to do instead.
    let (code, _, err) = run(&bijou(&dir, &["sync", "--connect", "https://127.0.0.1:1"]));
    assert_eq!(code, 2);
    one_error_line(&err, "https:// (TLS) is not supported");
}

/// Friction: `sync` to a port nobody listens on lacked echo's hint.
#[test]
fn sync_that_cannot_connect_says_what_to_check_on_every_transport() {
    let dir = scratch("syncrefused");
    let port = free_port();
    for target in [
        format!("ws://127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("127.0.0.1:{port}"),
    ] {
        let (code, out, err) = run(&bijou(
            &dir,
            &["sync", "--connect", &target, "--count", "1"],
        ));
        assert_eq!(code, 3, "{out}{err}");
        one_error_line(&err, &format!("cannot connect to 127.0.0.1:{port}"));
        assert!(
            err.contains("is the server running, and on this port?"),
            "{err}"
        );
    }
}

/// Friction: a failed inspection printed its summary twice (the report's
/// last line on stdout, then again as the error on stderr).
#[test]
fn a_failed_inspection_states_its_summary_once() {
    let dir = scratch("inspect-once");
    // One frame whose message is cut short, then a prefix announcing more
    // bytes than follow.
    std::fs::write(dir.join("bad.cap"), b"\x05SUM\x00\x00\x7aSUM").expect("write");
    let (code, out, err) = run(&bijou(&dir, &["inspect", "bad.cap"]));
    assert_eq!(code, 2, "{out}{err}");
    let both = format!("{out}{err}");
    assert_eq!(both.matches("with problems").count(), 1, "{both}");
    assert!(
        out.ends_with("with problems; stream malformed, stopped\n"),
        "{out}"
    );
    assert!(
        err.ends_with("error: the byte stream breaks where said above; the report stops there\n"),
        "{err}"
    );
    std::fs::write(dir.join("frames.cap"), b"\x05SUM\x00\x00").expect("write");
    let (code, out, err) = run(&bijou(
        &dir,
        &["inspect", "frames.cap", "--prefix", "bijou64"],
    ));
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(format!("{out}{err}").matches("with problems").count(), 1);
    assert!(
        err.ends_with("error: 1 frame(s) did not decode or verify; each is marked in the report\n"),
        "{err}"
    );
}

/// Friction: a file holding a peer id (what keygen prints) was taken as a
/// secret seed without a word, and signed as another identity. A labelled
/// key file cannot be mistaken for one; a bare 64-hex-digit file (the form
/// subduction_cli reads) is still read, with a warning naming the identity
/// it signs as.
#[test]
fn a_peer_id_used_as_a_key_file_is_warned_about() {
    let dir = scratch("peerid-key");
    let id = keygen(&dir, "me.key");
    std::fs::write(dir.join("id.txt"), format!("{id}\n")).expect("write");
    std::fs::write(dir.join("f"), b"x").expect("write");
    let (code, out, err) = run(&bijou(&dir, &["blob", "sign", "f", "--key", "me.key"]));
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "a labelled key file reads quietly: {err}");
    assert!(out.contains(&format!("by {id}")), "{out}");
    let (code, out, err) = run(&bijou(
        &dir,
        &["blob", "sign", "f", "--key", "id.txt", "--out", "f.sig2"],
    ));
    assert_eq!(code, 0, "{err}");
    let warning: Vec<&str> = err.lines().collect();
    assert_eq!(warning.len(), 1, "{err}");
    assert!(
        warning[0].starts_with(
            "warning: key file id.txt holds 64 hex digits alone, as a peer id (a public key) does"
        ),
        "{err}"
    );
    assert!(!out.contains(&id), "it signs as another identity: {out}");
    // A labelled file whose peer id is another key's is refused.
    let text = std::fs::read_to_string(dir.join("me.key")).expect("key");
    let other = keygen(&dir, "other.key");
    std::fs::write(dir.join("mixed.key"), text.replace(&id, &other)).expect("write");
    let (code, _, err) = run(&bijou(&dir, &["blob", "sign", "f", "--key", "mixed.key"]));
    assert_eq!(code, 2, "{err}");
    one_error_line(
        &err,
        &format!("its peer id {other} is not its seed's ({id})"),
    );
}

/// `bijou load` against `bijou serve` over framed TCP, small: every
/// connection held and answered at the end, every acknowledged push
/// fetched back, the stalled connections ended by the server's handshake
/// timeout and counted by it, the vanished ones not asked; the server's
/// figures file read (heap per connection, refusals by reason).
#[test]
fn load_holds_a_crowd_and_counts_every_bound() {
    let dir = scratch("load");
    let stats = dir.join("server.stats");
    let stats = stats.to_str().expect("utf-8 path");
    let (child, first) = server(
        &dir,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--transport",
            "tcp",
            "--max-connections",
            "400",
            "--idle-timeout",
            "120",
            "--stats",
            stats,
            "--quiet",
        ],
    );
    let _server = Killed(child);
    // "sync server S <id> listening on TCP 127.0.0.1:PORT (bijou64 prefix); ..."
    let addr = first
        .split_whitespace()
        .find(|word| word.starts_with("127.0.0.1:"))
        .unwrap_or_default()
        .to_owned();
    assert!(addr.len() > "127.0.0.1:".len(), "{first}");
    for _ in 0..50 {
        if std::fs::metadata(stats).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (code, out, err) = run(&bijou(
        &dir,
        &[
            "load",
            "--connect",
            &format!("tcp://{addr}"),
            "--connections",
            "300",
            "--flooders",
            "2",
            "--pushes",
            "20",
            "--stalled",
            "3",
            "--vanish",
            "30",
            "--server-stats",
            stats,
        ],
    ));
    assert_eq!(code, 0, "{out}{err}");
    for says in [
        "300 connections to TCP",
        "300 authenticated, 0 failed",
        "honest peer alone: 20 pushes acknowledged",
        "honest peer beside 2 flooder(s): 20 pushes acknowledged",
        "30 held connections disconnected at once halfway",
        "3 stalled connections (connected, never sent a challenge): 3 closed by the server",
        "fetched back: 40 of 40 acknowledged commits",
        "still authenticated at the end: 270 of 270 answered",
        "refused or dropped before their session (handshake_timeout 3)",
        "B per connection above",
    ] {
        assert!(out.contains(says), "{says:?} in {out}");
    }
}

/// A crowd larger than the file-descriptor limit is refused at start,
/// with how many descriptors it needs and what to do.
#[test]
fn serve_says_how_many_descriptors_a_crowd_needs() {
    let dir = scratch("fdlimit");
    let (code, _, err) = run(&bijou(
        &dir,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-connections",
            "100000000",
        ],
    ));
    assert_eq!(code, 2, "{err}");
    one_error_line(
        &err,
        "--max-connections 100000000 needs about 100000064 file descriptors",
    );
    assert!(err.contains("--reuse-port"), "{err}");
}

/// Friction: `bijou load --connections 2000` against a server capped at
/// 256 hung in silence until killed, while the server logged a line per
/// connection blaming a transport mismatch. Now the load says its
/// progress, names the server's `--max-connections`, and stops at its
/// `--deadline` saying what it did not do; the server says its cap once
/// and sums the connections that gave up waiting, blaming no transport.
#[test]
fn a_load_beyond_the_servers_cap_names_it_and_stops_at_its_deadline() {
    let dir = scratch("loadcap");
    let mut child = Command::new(BIJOU)
        .args(["serve", "--listen", "127.0.0.1:0", "--max-connections", "4"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server runs");
    let (lines, log) = std::sync::mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let _server = Killed(child);
    let first = log
        .recv_timeout(Duration::from_secs(30))
        .expect("a first line");
    let addr = first
        .split("ws://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default()
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{first}");

    let started = Instant::now();
    let mut load = Command::new(BIJOU)
        .args(["load", "--connect", &format!("ws://{addr}")])
        .args([
            "--connections",
            "20",
            "--concurrency",
            "20",
            "--flooders",
            "0",
        ])
        .args(["--pushes", "1", "--deadline", "8"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bijou load runs");
    // Bounded: the deadline, and room for a busy machine.
    while load.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = load.kill();
            panic!("bijou load ran past its deadline of 8 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, out, err) = run(&load.wait_with_output().expect("output"));
    assert!(started.elapsed() < Duration::from_secs(30), "{err}");
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("connections answered"), "progress said: {err}");
    assert!(err.contains("--max-connections"), "the cap named: {err}");
    let summary = err.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("error: stopped at the deadline of 8s (--deadline)"),
        "{err}"
    );
    assert!(summary.contains("the crowd: 4 answered"), "{summary}");
    assert!(
        summary.contains("not done: ") && summary.contains("fetch back"),
        "{summary}"
    );
    assert!(summary.contains("no figures are reported"), "{summary}");

    // The server: its cap said, the connections that gave up summed, and
    // no transport blamed.
    let mut said = vec![first];
    let until = Instant::now() + Duration::from_secs(20);
    while !said.iter().any(|l| l.contains("closed by their clients")) {
        let left = until.saturating_duration_since(Instant::now());
        match log.recv_timeout(left) {
            Ok(line) => said.push(line),
            Err(_) => break,
        }
    }
    let said = said.join("\n");
    assert!(said.contains("at its cap of 4 connections"), "{said}");
    assert!(
        said.contains("closed by their clients before their handshake"),
        "{said}"
    );
    assert!(said.contains("--max-connections 4"), "{said}");
    assert!(!said.contains("transport"), "{said}");
    assert!(!said.contains("ws:// URL"), "{said}");
}
