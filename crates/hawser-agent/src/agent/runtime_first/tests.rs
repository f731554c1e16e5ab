//! What a configuration that passed the config policy is judged against.

use hawser_plan::FileKind;

use super::*;

fn files(config: &str, crt_list: &str, routes: &str) -> FileSet {
    let mut files = FileSet::default();
    files.insert(CONFIG_PATH, FileKind::Config, config);
    files.insert("certs/crt-list.txt", FileKind::CrtList, crt_list);
    files.insert("maps/routes.map", FileKind::Map, routes);
    files
}

#[test]
fn a_passed_configuration_is_the_reference_while_the_files_it_read_stay() {
    let passed = PolicyPassed {
        files: Arc::new(files("global\n", "certs/a.pem\n", "a be_a\n")),
        read: ["certs/crt-list.txt".to_string()].into(),
    };
    let reference = Some(&b"global\n"[..]);
    // Another configuration, or map entries (data the policy never reads):
    // judged by what differs from the one that passed.
    assert_eq!(
        passed.config_for(&files("global\n x\n", "certs/a.pem\n", "b be_b\n")),
        reference
    );
    // A file the policy read that changed, or is gone: judged whole.
    assert_eq!(
        passed.config_for(&files("global\n", "/etc/x.pem\n", "a be_a\n")),
        None
    );
    let mut gone = FileSet::default();
    gone.insert(CONFIG_PATH, FileKind::Config, "global\n");
    assert_eq!(passed.config_for(&gone), None);
}
