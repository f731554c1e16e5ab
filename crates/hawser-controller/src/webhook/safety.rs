//! What a configuration must not contain for the webhook to run `haproxy -c`
//! on it: `-c` loads Lua and opens files, so a snippet could make the
//! controller run code or read its own files. Such a configuration is
//! refused before anything runs.

/// Directives that run code when HAProxy loads the configuration, or later.
const CODE: &[&str] = &[
    "lua-load",
    "lua-load-per-thread",
    "lua-prepend-path",
    "external-check",
    "program",
    "command",
    "insecure-fork-wanted",
    "insecure-setuid-wanted",
];

/// Keywords whose next word is a file HAProxy opens.
const FILE_ARGUMENTS: &[&str] = &[
    "crt",
    "crt-list",
    "ca-file",
    "crl-file",
    "errorfile",
    "chroot",
    "pidfile",
    "server-state-file",
    "server-state-base",
    "ca-base",
    "crt-base",
    "key-base",
    "issuers-chain-path",
    "ssl-dh-param-file",
    "-f",
    "load",
];

/// Every line of `config` that runs code or opens a file outside the
/// rendered tree (an absolute path not in `allowed`), as `line N: text`.
pub fn unsafe_directives(config: &str, allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (index, line) in config.lines().enumerate() {
        let code = line.split('#').next().unwrap_or_default();
        let words: Vec<&str> = code.split_whitespace().collect();
        let Some(first) = words.first() else {
            continue;
        };
        let runs_code = CODE.contains(first);
        let opens_file = words
            .windows(2)
            .any(|pair| FILE_ARGUMENTS.contains(&pair[0]) && is_outside(pair[1], allowed))
            || words.iter().any(|w| reads_map_file(w, allowed));
        if runs_code || opens_file {
            found.push(format!("line {}: {}", index + 1, line.trim()));
        }
    }
    found
}

/// A `map*(/path)` converter reads that file (the `(/` of a regex does not).
fn reads_map_file(word: &str, allowed: &[&str]) -> bool {
    word.match_indices("map").any(|(at, _)| {
        let rest = &word[at..];
        rest.find('(').is_some_and(|open| {
            let name = &rest[..open];
            let argument = rest[open + 1..]
                .split([',', ')'])
                .next()
                .unwrap_or_default();
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && is_outside(argument, allowed)
        })
    })
}

fn is_outside(path: &str, allowed: &[&str]) -> bool {
    let path = path.trim_matches('"');
    (path.starts_with('/') || path.starts_with('~')) && !allowed.contains(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_and_host_files_are_found() {
        let config = "global\n  lua-load /etc/x.lua\nfrontend f\n  bind :443 ssl crt /etc/ssl/key.pem\n  http-request set-var(txn.x) str(a),map(/etc/passwd)\n  acl a path -f /etc/shadow\nbackend b\n  option external-check\n  external-check command /bin/sh\n";
        let found = unsafe_directives(config, &[]);
        assert_eq!(found.len(), 5, "{found:?}");
        assert!(found[0].starts_with("line 2: lua-load"));
    }

    #[test]
    fn the_rendered_tree_and_allowed_paths_pass() {
        let config = "global\n  stats socket /run/hawser/admin.sock mode 600 level admin\n  server-state-file /run/hawser/server-state\nfrontend f\n  bind :443 ssl crt-list certs/crt-list.txt\n  use_backend %[path,map_beg(maps/routes.map)]\n  http-request return status 200 if { path /healthz }\n  http-request deny if { path_reg -i (^|/)([.]|%2e) }\n";
        assert!(unsafe_directives(config, &["/run/hawser/server-state"]).is_empty());
    }
}
