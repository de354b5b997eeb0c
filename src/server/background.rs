//! What a serving engine does beside answering calls, each on a thread of its own:
//! following the Claude dir (more often while a web page listens for news), embedding the
//! backlog, embedding client writes ahead of it, committing client writes to the text
//! index, loading the graph's view, and consolidating memories hourly. They stop together;
//! the store is then flushed and the view's snapshot saved, so the next start loads it
//! instead of rebuilding it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::{Engine, IngestReport};
use crate::web::{LIVE_INTERVAL, Live};
use crate::{Error, Result};

/// How often memories are consolidated.
const CONSOLIDATE_EVERY: Duration = Duration::from_secs(60 * 60);

/// The background work of a serving engine, running until [`Background::stop`].
#[derive(Debug)]
pub struct Background {
    engine: Arc<Engine>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts every thread: the watcher when `watch` is an interval (`None`: the store is
    /// served as it is), telling `live`'s listeners of what it reads.
    pub fn start(
        engine: &Arc<Engine>,
        watch: Option<Duration>,
        live: &Arc<Live>,
    ) -> Result<Background> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut background = Background {
            engine: engine.clone(),
            stop: stop.clone(),
            threads: Vec::new(),
        };
        let mut spawn = |name: &str, job: Box<dyn FnOnce() + Send>| -> Result<()> {
            let thread = std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(job)
                .map_err(|e| {
                    Error::FailedPrecondition(format!("cannot start the thread {name}: {e}"))
                })?;
            background.threads.push(thread);
            Ok(())
        };
        if let Some(interval) = watch {
            let (engine, stop, live) = (engine.clone(), stop.clone(), live.clone());
            // A run under way when the server stops ends at its next file.
            let cancel = crate::cancel::Cancel::of_flag(stop.clone());
            spawn(
                "eywa-watch",
                Box::new(move || {
                    cancel.within(|| {
                        follow(|| engine.ingest(), quiet, interval, &stop, &|| {
                            live.listening()
                        });
                    });
                }),
            )?;
        }
        // Embeds what ingest queued, newest first, while the server answers.
        let (e, s) = (engine.clone(), stop.clone());
        spawn("eywa-embed", Box::new(move || e.run_embedder(&s)))?;
        // Client writes answer once stored and found by their words; this embeds them,
        // ahead of the backlog (searches by meaning wait for it).
        let (e, s) = (engine.clone(), stop.clone());
        let deferred = engine.defer_write_embeddings();
        spawn(
            "eywa-embed-writes",
            Box::new(move || e.run_write_embedder(deferred, &s)),
        )?;
        // Client writes answer once searchable; this commits them to the text index soon
        // after.
        let (e, s) = (engine.clone(), stop.clone());
        let deferred = engine.defer_text_commits();
        spawn(
            "eywa-commit",
            Box::new(move || e.run_text_committer(deferred, &s)),
        )?;
        // The graph's view, loaded now at the server's priority (on a read's lowered
        // thread it took seconds while clients kept the cores busy), and again should a
        // walk find it gone.
        let (e, s) = (engine.clone(), stop.clone());
        spawn("eywa-view", Box::new(move || e.graph().run_view_loader(&s)))?;
        // Memories fade and are promoted: at start, then hourly.
        let (e, s) = (engine.clone(), stop.clone());
        spawn(
            "eywa-consolidate",
            Box::new(move || {
                every(CONSOLIDATE_EVERY, &s, || match e.consolidate_memories() {
                    Ok(r) if r.promoted + r.faded > 0 => tracing::info!(
                        promoted = r.promoted,
                        faded = r.faded,
                        "consolidated memories"
                    ),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "memory consolidation failed; trying later");
                    }
                });
            }),
        )?;
        Ok(background)
    }

    /// Tells every thread to stop (a watcher's run under way ends at its next file),
    /// without waiting: call it as soon as the server stops taking calls.
    pub fn stopping(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Stops every thread and waits for them; then flushes what client writes changed
    /// and saves the graph view's snapshot.
    pub fn stop(self) {
        self.stopping();
        self.engine.wake_embedder();
        for thread in self.threads {
            let _ = thread.join();
        }
        match self.engine.graph().store().flush() {
            Ok(_) => {
                if let Err(e) = self.engine.graph().save_view() {
                    tracing::warn!(error = %e, "cannot save the graph view");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot flush the store"),
        }
    }
}

/// Whether a failed run of a [`follow`] says nothing: a Claude dir that may come later,
/// or the stop.
pub fn quiet(e: &Error) -> bool {
    matches!(e, Error::ClaudeDirMissing { .. } | Error::Cancelled)
}

/// Ingests whenever the Claude dir changes, every `interval`, until `stop` is set. Each run
/// reads only new and changed files; a failed run is logged (unless `quiet` says it is
/// nothing to tell) and the next one tries again; a run that read nothing says nothing.
/// While `hurry` says so (a page listens for news), it looks again after
/// [`LIVE_INTERVAL`] at most.
pub fn follow<E: std::fmt::Display>(
    mut ingest: impl FnMut() -> std::result::Result<IngestReport, E>,
    quiet: impl Fn(&E) -> bool,
    interval: Duration,
    stop: &AtomicBool,
    hurry: &dyn Fn() -> bool,
) {
    while !stop.load(Ordering::Relaxed) {
        match ingest() {
            Ok(report) if report.files_read + report.agent_files_read > 0 => tracing::info!(
                files = report.files_read + report.agent_files_read,
                episodes = report.counts.episodes,
                seconds = report.elapsed.as_secs_f64(),
                "ingested changes"
            ),
            Ok(_) => {}
            Err(e) if quiet(&e) => {}
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "ingest failed; trying again"),
        }
        pause(interval, stop, |waited| waited >= LIVE_INTERVAL && hurry());
    }
}

/// Runs `job` now and then every `interval` until `stop` is set (seen within 50 ms).
fn every(interval: Duration, stop: &AtomicBool, mut job: impl FnMut()) {
    while !stop.load(Ordering::Relaxed) {
        job();
        pause(interval, stop, |_| false);
    }
}

/// Waits `interval` in slices of 50 ms at most, so that `stop` is seen promptly; ends
/// early once `enough` says so of the time waited.
fn pause(interval: Duration, stop: &AtomicBool, enough: impl Fn(Duration) -> bool) {
    let mut waited = Duration::ZERO;
    while waited < interval && !stop.load(Ordering::Relaxed) && !enough(waited) {
        let step = (interval - waited).min(Duration::from_millis(50));
        std::thread::sleep(step);
        waited += step;
    }
}
