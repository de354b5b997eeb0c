//! The real `eywa serve`, as a child process: its address, and every line it writes to
//! stderr as it writes them.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Lines a child wrote to stderr so far, and whether it has closed its stderr.
#[derive(Default)]
struct Said {
    lines: Vec<String>,
    closed: bool,
}

pub(crate) struct Serve {
    child: Child,
    pub addr: String,
    said: Arc<(Mutex<Said>, Condvar)>,
}

impl Serve {
    /// Spawns a prepared `eywa … serve` command and waits for it to report its address.
    pub(crate) fn spawn(mut command: Command) -> Serve {
        command.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let said = Arc::new((Mutex::new(Said::default()), Condvar::new()));
        let writer = said.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                writer.0.lock().unwrap().lines.push(line);
                writer.1.notify_all();
            }
            writer.0.lock().unwrap().closed = true;
            writer.1.notify_all();
        });
        let mut serve = Serve {
            child,
            addr: String::new(),
            said,
        };
        let lines = serve.wait_for(Duration::from_secs(120), |lines| {
            lines
                .iter()
                .any(|l| l.starts_with("eywa: serving gRPC on "))
        });
        serve.addr = lines
            .iter()
            .find_map(|l| l.strip_prefix("eywa: serving gRPC on "))
            .unwrap_or_else(|| panic!("serve did not report its address: {lines:#?}"))
            .trim()
            .to_owned();
        serve
    }

    /// The address it listens on.
    pub(crate) fn socket(&self) -> std::net::SocketAddr {
        self.addr.parse().expect("serve reports HOST:PORT")
    }

    /// The web view's address, as serve printed it.
    pub(crate) fn web_url(&self) -> String {
        let lines = self.wait_for(Duration::ZERO, |_| true);
        lines
            .iter()
            .find_map(|l| l.strip_prefix("eywa: web view at "))
            .unwrap_or_else(|| panic!("serve prints the web view's address: {lines:#?}"))
            .to_owned()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the lines written so far satisfy `done` (or stderr closes, or `timeout`
    /// passes); returns them.
    pub(crate) fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&[String]) -> bool,
    ) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let (lock, changed) = &*self.said;
        let mut said = lock.lock().unwrap();
        while !done(&said.lines) && !said.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            said = changed.wait_timeout(said, left).unwrap().0;
        }
        said.lines.clone()
    }

    /// Stops the server as Ctrl-C does, waits for it, and returns all it wrote.
    pub(crate) fn stop(mut self) -> Vec<String> {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "serve exited with {exit:?}");
        self.wait_for(Duration::from_secs(30), |_| false)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // A test that failed before `stop` leaves no server behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
