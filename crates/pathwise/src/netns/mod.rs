//! Test networks in Linux network namespaces, for the real-network tests and benchmarks.
//!
//! A [`Lab`] is a set of namespaces (named `pw-<pid>-<n>-<role>`, so concurrent tests never
//! collide) joined by veth pairs created directly inside them — nothing is added to the caller's
//! namespace — with private addresses only. Commands run in a namespace through `ip netns exec`
//! with a time limit; long-running processes (daemons, iperf3 servers) are started with
//! [`Lab::spawn`] and logged to the lab's scratch directory. Dropping the lab kills every process
//! it started and deletes the namespaces, which removes their devices and routes.

pub mod chain;

use anyhow::{Context as _, bail};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Why namespace tests cannot run here, if they cannot: not root, or a tool missing.
pub fn unavailable(tools: &[&str]) -> Option<String> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        });
    if uid.as_deref() != Some("0") {
        return Some("not root (network namespace tests need root; CI runs them as root)".into());
    }
    for t in ["ip"].iter().chain(tools) {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(t).is_file()));
        if !found {
            return Some(format!("`{t}` is not installed"));
        }
    }
    None
}

/// Run `cmd` with a time limit; its output (any exit status).
pub fn run_limited(cmd: &mut Command, limit: Duration) -> anyhow::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {cmd:?}"))?;
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait()?.is_some() {
            return Ok(child.wait_with_output()?);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output()?;
            bail!(
                "{cmd:?} did not finish within {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Namespaces and the processes running in them; all removed on drop.
#[derive(Debug)]
pub struct Lab {
    /// Namespace names, by index.
    pub ns: Vec<String>,
    /// Scratch directory (configurations, sockets, logs).
    pub dir: PathBuf,
    children: Vec<(String, Child)>,
}

impl Lab {
    /// One namespace per role, loopback up.
    pub fn new(roles: &[&str]) -> anyhow::Result<Lab> {
        let id = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("pw-{id}"));
        std::fs::create_dir_all(&dir)?;
        let mut lab = Lab {
            ns: Vec::new(),
            dir,
            children: Vec::new(),
        };
        for r in roles {
            let name = format!("pw-{id}-{r}");
            ip(&["netns", "add", &name])?;
            lab.ns.push(name);
            lab.exec_ok(lab.ns.len() - 1, &["ip", "link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }

    /// A veth pair between namespaces `a` and `b`, with an address (CIDR) on each end, up.
    pub fn link(
        &self,
        (a, a_if, a_addr): (usize, &str, &str),
        (b, b_if, b_addr): (usize, &str, &str),
    ) -> anyhow::Result<()> {
        ip(&[
            "link",
            "add",
            a_if,
            "netns",
            &self.ns[a],
            "type",
            "veth",
            "peer",
            "name",
            b_if,
            "netns",
            &self.ns[b],
        ])?;
        for (i, dev, addr) in [(a, a_if, a_addr), (b, b_if, b_addr)] {
            self.exec_ok(i, &["ip", "addr", "add", addr, "dev", dev])?;
            self.exec_ok(i, &["ip", "link", "set", dev, "up"])?;
        }
        Ok(())
    }

    /// Turn IPv4 forwarding on in namespace `i`.
    pub fn forward(&self, i: usize) -> anyhow::Result<()> {
        self.exec_ok(i, &["sysctl", "-qw", "net.ipv4.ip_forward=1"])
            .map(|_| ())
    }

    /// A command that runs in namespace `i`.
    pub fn command(&self, i: usize, argv: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns[i]]).args(argv);
        c
    }

    /// Run in namespace `i` with a 60 s limit; its output (any exit status).
    pub fn exec(&self, i: usize, argv: &[&str]) -> anyhow::Result<Output> {
        self.exec_for(i, argv, Duration::from_secs(60))
    }

    /// Run in namespace `i` with a time limit.
    pub fn exec_for(&self, i: usize, argv: &[&str], limit: Duration) -> anyhow::Result<Output> {
        run_limited(&mut self.command(i, argv), limit)
    }

    /// Run in namespace `i`; fail unless it succeeds. Its standard output.
    pub fn exec_ok(&self, i: usize, argv: &[&str]) -> anyhow::Result<String> {
        let out = self.exec(i, argv)?;
        if !out.status.success() {
            bail!(
                "{} in {}: {}",
                argv.join(" "),
                self.ns[i],
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Start a long-running process in namespace `i`, logging to `<dir>/<tag>.log`.
    pub fn spawn(&mut self, tag: &str, i: usize, argv: &[&str]) -> anyhow::Result<()> {
        let log = std::fs::File::create(self.log_path(tag))?;
        let child = self
            .command(i, argv)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {tag} in {}", self.ns[i]))?;
        self.children.push((tag.to_string(), child));
        Ok(())
    }

    /// Kill a process started with [`Lab::spawn`] (SIGKILL: no chance to clean up, like a
    /// crash) and wait for it.
    pub fn kill(&mut self, tag: &str) {
        self.children.retain_mut(|(t, c)| {
            if t == tag {
                let _ = c.kill();
                let _ = c.wait();
                false
            } else {
                true
            }
        });
    }

    /// Stop a process started with [`Lab::spawn`] with SIGTERM (a clean shutdown), waiting up to
    /// `limit` for it to exit.
    pub fn terminate(&mut self, tag: &str, limit: Duration) -> anyhow::Result<()> {
        for (t, c) in &mut self.children {
            if t == tag {
                let _ = Command::new("kill")
                    .args(["-TERM", &c.id().to_string()])
                    .status();
                let deadline = Instant::now() + limit;
                while c.try_wait()?.is_none() {
                    if Instant::now() > deadline {
                        bail!("{tag} did not stop within {limit:?}");
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        self.children.retain(|(t, _)| t != tag);
        Ok(())
    }

    /// The process id of a process started with [`Lab::spawn`] (`ip netns exec` execs the
    /// command, so it is the command's own).
    pub fn pid(&self, tag: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(t, _)| t == tag)
            .map(|(_, c)| c.id())
    }

    /// Where a spawned process logs.
    pub fn log_path(&self, tag: &str) -> PathBuf {
        self.dir.join(format!("{tag}.log"))
    }

    /// What a spawned process has logged so far.
    pub fn log(&self, tag: &str) -> String {
        std::fs::read_to_string(self.log_path(tag)).unwrap_or_default()
    }

    /// A path in the scratch directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = run_limited(Command::new("ip").args(args), Duration::from_secs(10))?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Drop for Lab {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.ns {
            let _ = run_limited(
                Command::new("ip").args(["netns", "del", n]),
                Duration::from_secs(10),
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Poll `check` every 50 ms until it returns `Some`, or fail after `limit` with `what`.
pub fn wait_for<T>(
    limit: Duration,
    what: &str,
    mut check: impl FnMut() -> Option<T>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = check() {
            return Ok(v);
        }
        if Instant::now() > deadline {
            bail!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
