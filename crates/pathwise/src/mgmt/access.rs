//! Who may use a management socket: its owner (the daemon's effective uid), root, and — when a
//! group is configured (`[daemon] socket_group`, the gateway's `socket_group`, `oracle serve
//! --socket-group`) — the members of that group. Nobody else.
//!
//! Two layers enforce it. The socket file is created with mode 0600, or 0660 and the configured
//! group, before anyone can connect to it (see [`super::Server::bind_with`]), so the kernel
//! refuses other users at `connect(2)`. Each accepted connection is then checked again with the
//! peer's credentials (`SO_PEERCRED`, and `SO_PEERGROUPS` for its supplementary groups): a file
//! whose mode was widened by hand, or a descriptor passed on, still admits no one else. A
//! refused connection is counted and logged here ([`Access::check`]) and answered in its
//! socket's own protocol by the caller: one JSON error line on the management sockets, a
//! `Refused(PermissionDenied)` frame on GIST's IPC socket (`pathwise_gist::ipc`).
//!
//! Every socket under this rule is made by [`bind`]: the management sockets
//! ([`super::Server`]) and GIST's IPC socket (`gist.ipc_socket`).

use anyhow::Context as _;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A group allowed on a management socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketGroup {
    /// Its name, as configured.
    pub name: String,
    /// Its id.
    pub gid: u32,
}

impl SocketGroup {
    /// Look `name` up in the system's group database; an error that says what is wrong.
    pub fn lookup(name: &str) -> Result<SocketGroup, String> {
        if name.is_empty() {
            return Err("the group name is empty".into());
        }
        match nix::unistd::Group::from_name(name) {
            Ok(Some(g)) => Ok(SocketGroup {
                name: name.to_string(),
                gid: g.gid.as_raw(),
            }),
            Ok(None) => Err(format!(
                "no group {name:?} on this system (create it, e.g. `groupadd --system {name}`)"
            )),
            Err(e) => Err(format!("looking up group {name:?}: {e}")),
        }
    }
}

/// The credentials of a connected client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its process id (at connect time).
    pub pid: i32,
    /// Its effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
    /// Its supplementary groups (empty when the kernel cannot tell).
    pub groups: Vec<u32>,
}

/// The rule a socket applies.
#[derive(Clone, Debug)]
pub struct Access {
    owner: u32,
    group: Option<SocketGroup>,
}

impl Access {
    /// Owner `owner` and root, plus the members of `group` if any.
    pub fn new(owner: u32, group: Option<SocketGroup>) -> Access {
        Access { owner, group }
    }

    /// For a socket this process creates.
    pub fn for_this_process(group: Option<SocketGroup>) -> Access {
        Access::new(nix::unistd::geteuid().as_raw(), group)
    }

    /// The socket file's mode: read and write for the owner, and for the group if one is
    /// configured (connecting to a Unix socket needs write permission on it).
    pub fn mode(&self) -> u32 {
        if self.group.is_some() { 0o660 } else { 0o600 }
    }

    /// The group, if any.
    pub fn group(&self) -> Option<&SocketGroup> {
        self.group.as_ref()
    }

    /// Whether `peer` may use the socket.
    pub fn admits(&self, peer: &Peer) -> bool {
        peer.uid == self.owner
            || peer.uid == 0
            || self
                .group
                .as_ref()
                .is_some_and(|g| peer.gid == g.gid || peer.groups.contains(&g.gid))
    }

    /// Who is allowed, in words.
    pub fn describe(&self) -> String {
        match &self.group {
            Some(g) => format!(
                "its owner (uid {}), root and members of group {} (gid {})",
                self.owner, g.name, g.gid
            ),
            None => format!("its owner (uid {}) and root", self.owner),
        }
    }

    /// The line a refused client gets.
    pub fn refusal(&self, peer: &Peer) -> String {
        format!(
            "permission denied: uid {} may not use this management socket (allowed: {})",
            peer.uid,
            self.describe()
        )
    }
}

/// Why [`Access::check`] refused a connection.
#[derive(Debug)]
pub enum Refused {
    /// The kernel could not tell who the peer is.
    NoCredentials,
    /// The peer is not allowed.
    NotAllowed(Peer),
}

impl Access {
    /// Check the client at the other end of `conn`, accepted on `socket`: its credentials, or
    /// why it is refused. A refusal is counted in `refused` and logged; the caller answers it
    /// in its socket's protocol and closes the connection.
    pub fn check(
        &self,
        conn: &UnixStream,
        socket: &Path,
        refused: &AtomicU64,
    ) -> Result<Peer, Refused> {
        let peer = match peer_of(conn) {
            Ok(p) => p,
            Err(e) => {
                let n = refused.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!(error = %e, refused = n, socket = %socket.display(),
                    "connection refused: no peer credentials");
                return Err(Refused::NoCredentials);
            }
        };
        if self.admits(&peer) {
            return Ok(peer);
        }
        let n = refused.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(
            uid = peer.uid,
            gid = peer.gid,
            pid = peer.pid,
            refused = n,
            socket = %socket.display(),
            allowed = %self.describe(),
            "connection refused"
        );
        Err(Refused::NotAllowed(peer))
    }
}

/// Listen on `path` under `access`: mode 0600 (0660 and the group's with a group). A stale
/// socket file (nothing accepting on it) is replaced; a live one is an error, so two daemons
/// cannot share a path. The directory is created if needed.
///
/// No window in which another user could connect: the socket is bound inside a private
/// directory (mode 0700) made for it next to `path`, given its mode and group there, then
/// renamed to `path`. (Setting the umask around `bind(2)` would do too, but the umask is
/// process-wide and the daemon has other threads creating files.)
pub fn bind(path: &Path, access: &Access) -> anyhow::Result<UnixListener> {
    if path.exists() {
        match UnixStream::connect(path) {
            Ok(_) => anyhow::bail!("{} is in use by a running daemon", path.display()),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path)
                    .with_context(|| format!("removing stale socket {}", path.display()))?;
            }
            Err(e) => anyhow::bail!(
                "{} exists and cannot be probed ({e}): another user's daemon may be using it",
                path.display()
            ),
        }
    }
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir
        }
        None => Path::new("."),
    };
    let private = private_dir(dir)?;
    let bound = bind_private(&private, path, access);
    let _ = std::fs::remove_file(private.join("s"));
    let _ = std::fs::remove_dir(&private);
    bound
}

/// A new directory of mode 0700 in `dir`, for [`bind_private`].
fn private_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt as _;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        // Short: the socket's whole path must fit in sun_path (108 bytes).
        let private = dir.join(format!(".pw{}.{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&private) {
            Ok(()) => return Ok(private),
            // Left by a process of the same pid that died: not ours to keep.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let _ = std::fs::remove_dir_all(&private);
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("creating a directory in {}", dir.display()));
            }
        }
    }
}

/// Bind in `private`, set the mode and group, and move the socket to `path`.
fn bind_private(private: &Path, path: &Path, access: &Access) -> anyhow::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = private.join("s");
    let listener =
        UnixListener::bind(&tmp).with_context(|| format!("binding {}", path.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(access.mode()))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    if let Some(g) = access.group() {
        std::os::unix::fs::chown(&tmp, None, Some(g.gid)).with_context(|| {
            format!(
                "giving {} to group {}: the daemon must be a member of it (or hold CAP_CHOWN)",
                path.display(),
                g.name
            )
        })?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("binding {}", path.display()))?;
    Ok(listener)
}

/// `SO_PEERGROUPS` (Linux 4.13): the generic value; the architectures with their own socket
/// option numbers fall back to the primary group alone.
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const SO_PEERGROUPS: libc::c_int = 59;

/// The credentials of the process at the other end of `conn`.
pub fn peer_of(conn: &UnixStream) -> io::Result<Peer> {
    let cred =
        nix::sys::socket::getsockopt(&conn.as_fd(), nix::sys::socket::sockopt::PeerCredentials)
            .map_err(io::Error::from)?;
    Ok(Peer {
        pid: cred.pid(),
        uid: cred.uid(),
        gid: cred.gid(),
        groups: peer_groups(conn),
    })
}

#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
fn peer_groups(conn: &UnixStream) -> Vec<u32> {
    use std::os::fd::AsRawFd;
    let mut groups = vec![0 as libc::gid_t; 256];
    let mut len = libc::socklen_t::try_from(groups.len() * size_of::<libc::gid_t>())
        .unwrap_or(libc::socklen_t::MAX);
    // SAFETY: `groups` is a writable buffer of `len` bytes; the kernel writes at most `len`
    // bytes and sets `len` to what it wrote.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERGROUPS,
            groups.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Vec::new();
    }
    groups.truncate(len as usize / size_of::<libc::gid_t>());
    groups
}

#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
fn peer_groups(_conn: &UnixStream) -> Vec<u32> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(uid: u32, gid: u32, groups: &[u32]) -> Peer {
        Peer {
            pid: 1,
            uid,
            gid,
            groups: groups.to_vec(),
        }
    }

    #[test]
    fn owner_root_and_group_members_are_admitted_others_are_not() {
        let owner_only = Access::new(1000, None);
        assert_eq!(owner_only.mode(), 0o600);
        assert!(owner_only.admits(&peer(1000, 1000, &[])));
        assert!(owner_only.admits(&peer(0, 0, &[])));
        assert!(!owner_only.admits(&peer(1001, 1000, &[1000])));
        let g = SocketGroup {
            name: "pathwise".into(),
            gid: 997,
        };
        let grouped = Access::new(1000, Some(g));
        assert_eq!(grouped.mode(), 0o660);
        assert!(grouped.admits(&peer(1001, 997, &[])), "primary group");
        assert!(
            grouped.admits(&peer(1002, 100, &[27, 997])),
            "supplementary"
        );
        assert!(!grouped.admits(&peer(1003, 100, &[27])));
        let line = grouped.refusal(&peer(1003, 100, &[27]));
        assert!(line.starts_with("permission denied: uid 1003"), "{line}");
        assert!(line.contains("group pathwise (gid 997)"), "{line}");
    }

    #[test]
    fn groups_are_looked_up_and_unknown_ones_refused() {
        // Group 0 is "root" on every Linux system this runs on.
        let root = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(0))
            .unwrap()
            .unwrap();
        assert_eq!(SocketGroup::lookup(&root.name).unwrap().gid, 0);
        let e = SocketGroup::lookup("pathwise-no-such-group").unwrap_err();
        assert!(e.contains("no group \"pathwise-no-such-group\""), "{e}");
        assert!(SocketGroup::lookup("").is_err());
    }

    #[test]
    fn a_peer_is_known_by_its_credentials() {
        let (a, _b) = UnixStream::pair().unwrap();
        let p = peer_of(&a).unwrap();
        assert_eq!(p.uid, nix::unistd::geteuid().as_raw());
        assert_eq!(p.gid, nix::unistd::getegid().as_raw());
        assert_eq!(p.pid, std::process::id() as i32);
    }
}
