//! The `/metrics` endpoint of the daemons: a minimal HTTP/1.1 responder for Prometheus
//! scrapes on an address the admin chooses (off by default; loopback is the usual
//! choice). Requests are bounded (8 KiB of header, 5 s to send it) and anything but
//! `GET /metrics` gets a 404. The page itself comes from the daemon's own loop through
//! `render`, so that it reads a consistent state.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The content type of Prometheus' text format as prometheus-client writes it.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

const MAX_REQUEST: usize = 8 << 10;

/// A scrape waiting for its page: the daemon's loop answers it.
pub type Scrape = tokio::sync::oneshot::Sender<String>;

/// Serves scrapes at `addr`, each handed to the daemon's loop as a [`Scrape`] on the
/// returned receiver, so that the page is rendered from the state the loop owns.
pub async fn serve_to_loop(
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::sync::mpsc::Receiver<Scrape>)> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Scrape>(16);
    let bound = serve(addr, move || {
        let tx = tx.clone();
        async move {
            let (reply, page) = tokio::sync::oneshot::channel();
            tx.send(reply).await.ok()?;
            page.await.ok()
        }
    })
    .await?;
    Ok((bound, rx))
}

/// Binds `addr` and serves scrapes until the process ends; returns the bound address.
pub async fn serve<F, Fut>(addr: SocketAddr, render: F) -> std::io::Result<SocketAddr>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<String>> + Send,
{
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let render = std::sync::Arc::new(render);
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, peer)) = listener.accept().await else {
                continue;
            };
            let render = render.clone();
            tokio::spawn(async move {
                let mut buf = Vec::with_capacity(1024);
                let read = tokio::time::timeout(Duration::from_secs(5), async {
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
                        let n = conn.read(&mut chunk).await?;
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    Ok::<_, std::io::Error>(())
                })
                .await;
                if !matches!(read, Ok(Ok(()))) {
                    return;
                }
                let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
                let wanted =
                    line.starts_with(b"GET /metrics ") || line.starts_with(b"GET /metrics?");
                let (status, ctype, body) = if wanted {
                    match render().await {
                        Some(b) => ("200 OK", CONTENT_TYPE, b),
                        None => ("503 Service Unavailable", "text/plain", "stopping\n".into()),
                    }
                } else {
                    (
                        "404 Not Found",
                        "text/plain",
                        "only GET /metrics here\n".into(),
                    )
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                if conn.write_all(head.as_bytes()).await.is_ok() {
                    let _ = conn.write_all(body.as_bytes()).await;
                }
                let _ = conn.shutdown().await;
                tracing::trace!(%peer, status, "metrics scrape");
            });
        }
    });
    Ok(bound)
}

/// Labels of one series.
pub type Labels = Vec<(String, String)>;

/// Most running jobs with per-job series (each series has a job label).
pub const MAX_JOB_SERIES: usize = 1000;

/// The per-job series of running jobs (CPU time, memory, GPU memory), the newest
/// [`MAX_JOB_SERIES`] jobs by `order`, and how many were left out.
pub fn register_job_series(
    reg: &mut prometheus_client::registry::Registry,
    mut jobs: Vec<(u64, Labels, &bulkhead_proto::acct::JobUsage)>,
) {
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    jobs.sort_by_key(|(order, _, _)| std::cmp::Reverse(*order));
    let dropped = jobs.len().saturating_sub(MAX_JOB_SERIES);
    let cpu = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let mem = Family::<Labels, Gauge>::default();
    let gpu_mem = Family::<Labels, Gauge>::default();
    for (_, l, u) in jobs.into_iter().take(MAX_JOB_SERIES) {
        if let Some(c) = u.cpu_usec {
            cpu.get_or_create(&l).set(c as f64 / 1e6);
        }
        if let Some(m) = u.mem_current_bytes {
            mem.get_or_create(&l).set(m as i64);
        }
        // Unknown on any of its GPUs: no figure rather than a low one.
        let g: Option<u64> = u.gpus.iter().map(|g| g.mem_current_mb).sum();
        if let Some(g) = g {
            gpu_mem.get_or_create(&l).set((g << 20) as i64);
        }
    }
    reg.register("job_cpu_seconds", "CPU time of running jobs", cpu);
    reg.register("job_memory_bytes", "Memory of running jobs", mem);
    reg.register(
        "job_gpu_memory_bytes",
        "GPU memory of running jobs' processes",
        gpu_mem,
    );
    let d = Gauge::<i64>::default();
    d.set(dropped as i64);
    reg.register(
        "job_series_dropped",
        "Running jobs left out of the per-job series (cardinality bound)",
        d,
    );
}
