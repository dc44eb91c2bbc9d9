//! A minimal HTTP/1.1 client over a plain socket, for tests and benchmarks that read a
//! server's `/metrics`, `/healthz` or `/readyz`, or post a JSON body (they need nothing
//! more than a status and a body, and no client library's retries or pooling).

/// `GET http://host:port/path`: the status code and the body.
pub async fn get(url: &str) -> std::io::Result<(u16, String)> {
    request("GET", url, None).await
}

/// `method` on `http://host:port/path`, with `json` as an `application/json` body when
/// given: the status code and the body.
pub async fn request(
    method: &str,
    url: &str,
    json: Option<&[u8]>,
) -> std::io::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let bad = || std::io::Error::other(format!("not an http://host:port/path URL: {url}"));
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let (host, path) = rest.split_once('/').ok_or_else(bad)?;
    let mut s = tokio::net::TcpStream::connect(host).await?;
    let mut head = format!("{method} /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    if let Some(body) = json {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await?;
    if let Some(body) = json {
        // A server may answer (413) before the whole body is sent.
        let _ = s.write_all(body).await;
    }
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
