//! Plain HTTP/1.1 requests as a browser or curl sends them, answers read whole.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

/// An answer: its status, headers (names lowercased) and body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The first header named `name` (lowercase), if any.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The form token (CSRF) a page of the web view carries.
pub(crate) fn csrf(body: &str) -> String {
    body.split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|v| v.split('"').next())
        .expect("a form with the token")
        .to_owned()
}

/// `GET path` from the server at `addr`, naming it as `addr` in `Host`.
pub(crate) fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path, &addr.to_string())
}

/// `method path` with `host` as the `Host` header.
pub(crate) fn request(addr: SocketAddr, method: &str, path: &str, host: &str) -> Reply {
    request_with(addr, method, path, host, &[])
}

/// [`request`] with more headers.
pub(crate) fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
) -> Reply {
    send(addr, method, path, host, headers, "")
}

/// `POST path` of a form's fields, as a browser sends it.
pub(crate) fn post_form(addr: SocketAddr, path: &str, fields: &[(&str, &str)]) -> Reply {
    post_form_with(addr, path, fields, &[])
}

/// [`post_form`] with more headers (a cookie, `Sec-Fetch-Site`).
pub(crate) fn post_form_with(
    addr: SocketAddr,
    path: &str,
    fields: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> Reply {
    let encode = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b' ' => "+".to_owned(),
                b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => (b as char).to_string(),
                b => format!("%{b:02X}"),
            })
            .collect()
    };
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let mut headers = headers.to_vec();
    headers.push(("Content-Type", "application/x-www-form-urlencoded"));
    send(
        addr,
        "POST",
        path,
        &addr.to_string(),
        &headers,
        &body.join("&"),
    )
}

/// Sends one request with `body` and reads the answer whole.
fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    let more: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{more}Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an answer has a head");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
    {
        body = unchunk(&body);
    }
    Reply {
        status,
        headers,
        body: String::from_utf8(body).expect("a UTF-8 body"),
    }
}

/// A chunked body's bytes.
fn unchunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = std::str::from_utf8(&raw[..end]).unwrap();
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
}
