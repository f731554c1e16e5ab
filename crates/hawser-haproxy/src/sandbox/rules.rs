//! The Landlock ruleset of a sandboxed child: what HAProxy needs from the
//! system (found by tracing `haproxy -c` and a serving HAProxy), the
//! caller's trees, sockets and ports, and nothing else.

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, PathFd,
    RestrictionStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    make_bitflags, path_beneath_rules,
};

use super::{Enforcement, Sandbox, SandboxError, SandboxSupport};

/// The newest ABI whose file system rights the sandbox asks for: version 9
/// adds connecting to pathname unix sockets, so a check cannot reach a
/// control socket. TCP needs 4, scopes 6; UDP (10) is left open, because
/// HAProxy resolves server names while it parses.
const FS_ABI: ABI = ABI::V9;
/// The ABI of the network rights asked for: TCP bind and connect.
const NET_ABI: ABI = ABI::V4;
/// The ABI of the scopes asked for: abstract unix sockets and signals.
const SCOPE_ABI: ABI = ABI::V6;

/// Read-only system files and directories: shared libraries and the loader's
/// cache, locales, OpenSSL's configuration and the public CA certificates
/// (HAProxy's HTTP client loads them at start), the name service and time
/// zone files (`init-addr libc` resolves while parsing), CPU topology, and
/// the random devices. A path absent on this system is skipped.
const SYSTEM_READ: &[&str] = &[
    "/lib",
    "/lib32",
    "/lib64",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
    "/etc/ssl/openssl.cnf",
    "/etc/ssl/certs",
    "/etc/pki/tls/openssl.cnf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust/extracted",
    "/usr/share/ca-certificates",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/localtime",
    "/usr/share/zoneinfo",
    "/sys/devices/system/cpu",
    "/sys/devices/system/node",
    "/dev/random",
    "/dev/urandom",
];

/// Opened for writing too: `Stdio::null()` opens it on the spawning
/// (restricted) thread, and what is written there is gone.
const SINK: &str = "/dev/null";

fn read_access() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{ReadFile | ReadDir})
}

fn socket_access() -> BitFlags<AccessFs> {
    read_access() | make_bitflags!(AccessFs::{MakeSock | RemoveFile | ResolveUnix})
}

/// Restricts the calling thread (and so every child it spawns from now on)
/// to `sandbox`, with `executables` the only files it may execute.
pub(super) fn restrict_this_thread(
    sandbox: &Sandbox,
    executables: &[PathBuf],
) -> Result<Enforcement, SandboxError> {
    restrict(sandbox, executables).map(|status| enforcement(&status))
}

/// Restricts a thread that ends right after (see [`super::support`]) with
/// an empty sandbox, and reports what the kernel enforced.
pub(super) fn probe() -> SandboxSupport {
    match restrict(&Sandbox::default(), &[]) {
        Ok(status) => SandboxSupport {
            enforcement: enforcement(&status),
            landlock_abi: abi_number(status.landlock),
        },
        Err(_) => SandboxSupport {
            enforcement: Enforcement::None,
            landlock_abi: 0,
        },
    }
}

fn restrict(sandbox: &Sandbox, executables: &[PathBuf]) -> Result<RestrictionStatus, SandboxError> {
    let mut created = Ruleset::default()
        .handle_access(AccessFs::from_all(FS_ABI))
        .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(NET_ABI)))
        .and_then(|ruleset| ruleset.scope(Scope::from_all(SCOPE_ABI)))
        .and_then(|ruleset| ruleset.create())
        .and_then(|created| created.add_rules(path_beneath_rules(SYSTEM_READ, read_access())))
        .and_then(|created| {
            created.add_rules(path_beneath_rules(
                [SINK],
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))
        })
        .and_then(|created| {
            created.add_rules(path_beneath_rules(
                executables,
                AccessFs::Execute | AccessFs::ReadFile,
            ))
        })
        .map_err(SandboxError::Ruleset)?;
    for path in &sandbox.read {
        created = add_path(created, path, read_access())?;
    }
    for dir in &sandbox.sockets {
        created = add_path(created, dir, socket_access())?;
    }
    let ports = sandbox
        .bind_tcp
        .iter()
        .map(|port| NetPort::new(*port, AccessNet::BindTcp))
        .chain(
            sandbox
                .connect_tcp
                .iter()
                .map(|port| NetPort::new(*port, AccessNet::ConnectTcp)),
        );
    created
        .add_rules(ports.map(Ok::<_, landlock::RulesetError>))
        .and_then(|created| created.restrict_self())
        .map_err(SandboxError::Ruleset)
}

/// A rule for a path the caller named: it must exist (a tree that cannot be
/// opened is an error, never a silently narrower sandbox). A file gets the
/// file rights of `access` only.
fn add_path(
    created: landlock::RulesetCreated,
    path: &PathBuf,
    access: BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, SandboxError> {
    let fd = PathFd::new(path).map_err(|source| SandboxError::Path {
        path: path.clone(),
        source,
    })?;
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(FS_ABI)
    };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(SandboxError::Ruleset)
}

fn enforcement(status: &RestrictionStatus) -> Enforcement {
    match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    }
}

/// The kernel's Landlock ABI version, 0 without Landlock.
fn abi_number(status: LandlockStatus) -> u32 {
    let LandlockStatus::Available {
        effective_abi,
        kernel_abi,
    } = status
    else {
        return 0;
    };
    if let Some(newer) = kernel_abi.and_then(|abi| u32::try_from(abi).ok()) {
        return newer;
    }
    match effective_abi {
        ABI::V1 => 1,
        ABI::V2 => 2,
        ABI::V3 => 3,
        ABI::V4 => 4,
        ABI::V5 => 5,
        ABI::V6 => 6,
        ABI::V7 => 7,
        ABI::V8 => 8,
        ABI::V9 => 9,
        ABI::V10 => 10,
        _ => 0,
    }
}
