//! Unit tests of the tokenizer and the policy's allowances; the hostile
//! corpus is in `tests/suite/policy_corpus.rs`.

use sha2::{Digest, Sha256};

use super::tokenize::{LineFault, lines};
use super::*;

fn words(line: &str) -> Vec<String> {
    let line = lines(line.as_bytes()).next().expect("one line");
    line.words.iter().map(|w| w.text()).collect()
}

fn no_files(_: &str) -> Option<Vec<u8>> {
    None
}

fn check(policy: &ConfigPolicy, config: &str) -> Result<(), PolicyError> {
    policy.check_config(config.as_bytes(), &no_files)
}

#[test]
fn words_are_split_as_haproxy_splits_them() {
    assert_eq!(words("  \"lua-load\" x"), ["lua-load", "x"]);
    assert_eq!(words("'lua'-\"load\" x"), ["lua-load", "x"]);
    assert_eq!(words("lua\\x2dload x"), ["lua-load", "x"]);
    assert_eq!(words("a\\ b c#d e"), ["a b", "c"]);
    assert_eq!(
        words("a '\\x41' \"\\x41\" \\$ \\q"),
        ["a", "\\x41", "A", "\\$", "\\q"]
    );
    assert_eq!(words("\r lua-load x\rignored"), ["lua-load", "x"]);
    assert_eq!(words("a \"\" b \"\""), ["a", "", "b"]);
    assert_eq!(words("a \"#\" '#' \\#"), ["a", "#", "#", "#"]);
}

#[test]
fn lines_are_numbered_as_haproxy_numbers_them() {
    let config = "a\\\nb\r\n\nc";
    let numbered: Vec<(u32, usize)> = lines(config.as_bytes())
        .map(|l| (l.number, l.words.len()))
        .collect();
    assert_eq!(numbered, [(1, 1), (2, 1), (3, 0), (4, 1)]);
    assert_eq!(lines(b"").count(), 0);
    assert_eq!(lines(b"a\n").count(), 1);
}

#[test]
fn environment_is_expanded_inside_double_quotes_only() {
    let line = lines(b"a $HOME '${HOME}' \"x\\$y\" \"${HOME}\"")
        .next()
        .expect("one line");
    let flags: Vec<bool> = line.words.iter().map(|w| w.expands_environment).collect();
    assert_eq!(flags, [false, false, false, false, true]);
}

#[test]
fn lines_haproxy_would_not_read_are_faults() {
    let fault = |text: &str| lines(text.as_bytes()).next().and_then(|l| l.fault);
    assert_eq!(fault("a \"b"), Some(LineFault::UnmatchedQuote));
    assert_eq!(fault("a \\x4"), Some(LineFault::BadHexEscape));
    assert_eq!(fault("a \\x+1"), Some(LineFault::BadHexEscape));
    assert_eq!(fault("lua-load\\x00 x"), Some(LineFault::Nul));
    assert_eq!(fault(&"w ".repeat(65)), Some(LineFault::TooManyWords));
    assert_eq!(fault("a 'b' \"c\""), None);
}

#[test]
fn hawser_paths_are_allowed_by_what_the_caller_trusts() {
    let config = "global\n  log fd@2 local0\n  stats socket /run/hawser/admin.sock mode 600 level admin\n  server-state-file /run/hawser/server-state\nfrontend m\n  bind unix@/run/hawser/mirror.sock mode 600\n  bind :443 ssl crt-list certs/crt-list.txt\n  use_backend %[path,map_beg(maps/routes.map)]\n  http-request deny if { path_reg -i (^|/)([.]|%2e)(/|$) }\n  log stdout format raw local0\n";
    let trusted = ConfigPolicy::default()
        .allow_socket("/run/hawser/admin.sock")
        .allow_socket_dir("/run/hawser")
        .allow_file("/run/hawser/server-state");
    assert!(check(&trusted, config).is_ok());
    let error = check(&ConfigPolicy::default(), config).expect_err("nothing trusted");
    assert_eq!(error.refusal().map(|r| r.line), Some(3));
    // A trusted directory holds sockets, not files, and no `..` walks out of it.
    let escape = "global\n  stats socket /run/hawser/../admin.sock\n";
    assert!(check(&trusted, escape).is_err());
    assert!(check(&trusted, "global\n  crt-base /run/hawser\n").is_err());
}

#[test]
fn only_the_builtin_lua_loads_by_its_digest() {
    let builtin = b"core.register_action('x', {}, function() end)".to_vec();
    let digest: [u8; 32] = Sha256::digest(&builtin).into();
    let policy = ConfigPolicy::default().allow_lua_digest(digest);
    let config = "global\n  lua-load lua/mirror.lua \"unix@mirror.sock\"\n";
    let tree = |same: bool| {
        let builtin = builtin.clone();
        move |path: &str| {
            (path == "lua/mirror.lua").then(|| {
                if same {
                    builtin.clone()
                } else {
                    b"os.execute('id')".to_vec()
                }
            })
        }
    };
    assert!(policy.check_config(config.as_bytes(), &tree(true)).is_ok());
    let error = policy
        .check_config(config.as_bytes(), &tree(false))
        .expect_err("another file behind the same line");
    assert_eq!(error.metric_label(), "foreign_lua");
    let outside = "global\n  lua-load ../lua/mirror.lua\n";
    assert!(
        policy
            .check_config(outside.as_bytes(), &tree(true))
            .is_err()
    );
}

#[test]
fn a_refusal_names_its_culprit_line_and_reason_in_bounded_text() {
    fn marks(config: &str, line: u32) -> Option<String> {
        config
            .lines()
            .take(line as usize)
            .filter_map(|l| l.trim().strip_prefix("# snippet: "))
            .last()
            .map(|s| format!("snippet {s}"))
    }
    let long = "x".repeat(500);
    let config = format!("global\n  # snippet: global-evil\n  lua-load /tmp/{long}.lua\n");
    let policy = ConfigPolicy::default().name_culprits(marks, vec!["base/haproxy.cfg".into()]);
    let error = check(&policy, &config).expect_err("refused");
    let message = error.to_string();
    assert!(
        message.contains("line 3 (from snippet global-evil)"),
        "{message}"
    );
    assert!(message.len() < 400, "{message}");
    let unmarked = check(&policy, "global\n  lua-load x\n").expect_err("refused");
    assert!(
        unmarked.to_string().contains("override base/haproxy.cfg"),
        "{unmarked}"
    );
}

#[test]
fn a_crt_list_is_judged_line_by_line() {
    let config = "frontend f\n  bind :443 ssl crt-list certs/crt-list.txt\n";
    let policy = ConfigPolicy::default();
    let judge = |list: &'static str| {
        let tree =
            move |path: &str| (path == "certs/crt-list.txt").then(|| list.as_bytes().to_vec());
        policy.check_config(config.as_bytes(), &tree)
    };
    judge("certs/a.pem a.example.com\ncerts/b.pem [alpn h2] *.example.com !x.example.com\n")
        .expect("a crt-list of the tree");
    for hostile in [
        "/etc/ssl/private/key.pem a.example.com\n",
        "certs/a.pem [ca-file /etc/ssl/ca.pem verify required] a.example.com\n",
        "certs/a.pem [crl-file\t'/etc/crl.pem'] a.example.com\n",
        "../../etc/key.pem\n",
    ] {
        let error = judge(hostile).expect_err(hostile);
        assert_eq!(error.metric_label(), "outside_tree", "{hostile}: {error}");
        assert_eq!(error.refusal().map(|r| r.line), Some(2), "{hostile}");
    }
}

#[test]
fn judging_the_changed_lines_of_a_passed_configuration_agrees_with_judging_all() {
    const ALLOWED: [&str; 6] = [
        "backend b",
        "  server s1 127.0.0.1:80 weight 1",
        "  server s2 127.0.0.2:80 weight 1",
        "  balance roundrobin",
        "",
        "  # a comment",
    ];
    const REFUSED: [&str; 3] = [
        "  server s3 127.0.0.3:80 ca-file /etc/passwd",
        "  lua-load /tmp/x.lua",
        "  setenv X \"$HOME\"",
    ];
    let policy = ConfigPolicy::default();
    let verdict = |result: Result<(), PolicyError>| {
        result.map_err(|e| e.refusal().map(|r| (r.line, r.text.clone())))
    };
    // A small deterministic generator (xorshift), so failures replay.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut roll = |sides: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % sides as u64) as usize
    };
    let mut changed_ones = 0;
    for _ in 0..2000 {
        let lines = roll(8);
        let passed: Vec<&str> = (0..lines).map(|_| ALLOWED[roll(ALLOWED.len())]).collect();
        // An edit of the passed configuration: lines replaced, added or
        // removed at one place, some of them refused.
        let mut config = passed.clone();
        let at = roll(config.len() + 1);
        let removed = roll(3).min(config.len() - at);
        let added: Vec<&str> = (0..roll(3))
            .map(|_| match roll(3) {
                0 => REFUSED[roll(REFUSED.len())],
                _ => ALLOWED[roll(ALLOWED.len())],
            })
            .collect();
        config.splice(at..at + removed, added);
        let ending = if roll(2) == 0 { "\n" } else { "" };
        let (passed, config) = (passed.join("\n") + ending, config.join("\n") + ending);
        let all = verdict(check(&policy, &config));
        let changed =
            verdict(policy.check_config_change(passed.as_bytes(), config.as_bytes(), &no_files));
        assert_eq!(changed, all, "{passed:?} → {config:?}");
        changed_ones += usize::from(all.is_err());
    }
    assert!(changed_ones > 100, "too few refused edits: {changed_ones}");

    // Edits of bytes, not lines: text removed from within lines joins
    // what was left of two of them into one new line.
    for _ in 0..2000 {
        let lines = 1 + roll(6);
        let passed: Vec<&str> = (0..lines).map(|_| ALLOWED[roll(ALLOWED.len())]).collect();
        let passed = passed.join("\n") + "\n";
        let from = roll(passed.len());
        let to = from + roll(passed.len() - from + 1);
        let inserted = match roll(3) {
            0 => REFUSED[roll(REFUSED.len())],
            1 => "lua-",
            _ => "",
        };
        let config = format!("{}{inserted}{}", &passed[..from], &passed[to..]);
        let all = verdict(check(&policy, &config));
        let changed =
            verdict(policy.check_config_change(passed.as_bytes(), config.as_bytes(), &no_files));
        assert_eq!(changed, all, "{passed:?} → {config:?}");
    }
    let merged = policy.check_config_change(
        b"  lua-x 1\nbackend b\n  y load /tmp/x.lua\n",
        b"  lua-load /tmp/x.lua\n",
        &no_files,
    );
    assert!(merged.is_err(), "a line joined by a removal is judged");

    // Only what changed is judged: a line both share is taken as passed.
    let shared = "  lua-load /tmp/x.lua\nbackend b\n  server s1 127.0.0.1:80\n";
    let edited = "  lua-load /tmp/x.lua\nbackend b\n  server s1 127.0.0.9:80\n";
    assert!(check(&policy, edited).is_err());
    policy
        .check_config_change(shared.as_bytes(), edited.as_bytes(), &no_files)
        .expect("only the server line is judged");
    let error = policy
        .check_config_change(
            shared.as_bytes(),
            &format!("{edited}  lua-load /a.lua\n").into_bytes(),
            &no_files,
        )
        .expect_err("an added line is judged");
    assert_eq!(error.refusal().map(|r| r.line), Some(4));
}
