//! A minimal HTTP GET over a plain socket, for tests and benchmarks that read a server's
//! `/metrics`, `/healthz` or `/readyz` (they need nothing more than a status and a body).

/// `GET http://host:port/path`: the status code and the body.
pub async fn get(url: &str) -> std::io::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let bad = || std::io::Error::other(format!("not an http://host:port/path URL: {url}"));
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let (host, path) = rest.split_once('/').ok_or_else(bad)?;
    let mut s = tokio::net::TcpStream::connect(host).await?;
    s.write_all(
        format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no HTTP head"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("no HTTP status"))?;
    Ok((status, body.to_owned()))
}
